// This file is NOT part of upstream Kubernetes. It belongs to hpa-conformance's upstream adapter
// (adapters/upstream) and is added to package podautoscaler at build time with `go build -overlay`
// for the releases whose controller keeps HPA selectors behind the `selectorTracker` interface
// (hpa_selector_store.go, 1.37 on: the HPAOptimizedSelectorStore store or the BiMultimap, chosen
// by that gate when the controller is built; the tracker does its own locking).

package podautoscaler

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubernetes/pkg/controller/util/selectors"
)

// HPAAdapterTrack registers the HPA in the selector tracker with the Nothing selector, as the
// informer's add handler does for a new HPA (without putting it on the work queue).
func (a *HorizontalController) HPAAdapterTrack(namespace, name string) {
	a.selectorTracker.PutIfAbsent(namespace, selectors.Key{Name: name, Namespace: namespace}, labels.Nothing())
}

// HPAAdapterSetOtherHPAs makes the selector tracker hold exactly these other HPAs (keys
// "namespace/name"), each with a selector matching every pod, as if their informer add handlers
// and reconciliations had registered selectors that select the pods at hand. Other HPAs from an
// earlier call that are not in keys are removed.
func (a *HorizontalController) HPAAdapterSetOtherHPAs(previous, keys []string) {
	for _, k := range previous {
		key := selectors.Parse(k)
		a.selectorTracker.Delete(key.Namespace, key)
	}
	for _, k := range keys {
		key := selectors.Parse(k)
		a.selectorTracker.Delete(key.Namespace, key)
		a.selectorTracker.PutIfAbsent(key.Namespace, key, labels.Everything())
	}
}
