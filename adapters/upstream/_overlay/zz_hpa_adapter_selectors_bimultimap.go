// This file is NOT part of upstream Kubernetes. It belongs to hpa-conformance's upstream adapter
// (adapters/upstream) and is added to package podautoscaler at build time with `go build -overlay`
// for the releases whose controller keeps HPA selectors in `hpaSelectors` (a BiMultimap) guarded
// by `hpaSelectorsMux`: 1.32 to 1.36 (versions/<release>/overlay names it).

package podautoscaler

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubernetes/pkg/controller/util/selectors"
)

// HPAAdapterTrack registers the HPA in the selector tracker with the Nothing selector, as the
// informer's add handler does for a new HPA (without putting it on the work queue).
func (a *HorizontalController) HPAAdapterTrack(namespace, name string) {
	a.hpaSelectorsMux.Lock()
	defer a.hpaSelectorsMux.Unlock()
	k := selectors.Key{Name: name, Namespace: namespace}
	if !a.hpaSelectors.SelectorExists(k) {
		a.hpaSelectors.PutSelector(k, labels.Nothing())
	}
}

// HPAAdapterSetOtherHPAs makes the selector tracker hold exactly these other HPAs (keys
// "namespace/name"), each with a selector matching every pod, as if their informer add handlers
// and reconciliations had registered selectors that select the pods at hand. Other HPAs from an
// earlier call that are not in keys are removed.
func (a *HorizontalController) HPAAdapterSetOtherHPAs(previous, keys []string) {
	a.hpaSelectorsMux.Lock()
	defer a.hpaSelectorsMux.Unlock()
	for _, k := range previous {
		a.hpaSelectors.DeleteSelector(selectors.Parse(k))
	}
	for _, k := range keys {
		a.hpaSelectors.PutSelector(selectors.Parse(k), labels.Everything())
	}
}
