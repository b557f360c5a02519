// CoreDNS for the kind node image, with the plugins of the Corefile kubeadm writes and nothing else
// (kind-config/scripts/node-image.sh builds it; the version is the minor's COREDNS_VERSION, pinned
// in kind-config/versions/<minor>/coredns/go.mod). Upstream's own main imports every plugin of its
// plugin.cfg, among them cloud DNS providers whose SDKs were most of the build's time; the plugins
// are registered by their imports, and the server's directive order is CoreDNS's own whatever is
// imported. kubeadm's Corefile: errors, health, ready, kubernetes, prometheus (plugin/metrics),
// forward, cache, loop, reload, loadbalance.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
