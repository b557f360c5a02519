//go:build hpaadapter

package server

// The step protocol's messages (harness/PROTOCOL.md) are the Go kit's (kits/go/protocol, one home
// for the Go protocol types; go.mod replaces the module with ../../kits/go). This file holds what
// is the adapter's own: its name and the version it speaks.

import "hpa-conformance/kits/go/protocol"

// ProtocolVersion is the step-protocol version this adapter speaks.
const ProtocolVersion = protocol.Version

// ImplementationName is what the adapter calls itself in `hello`.
const ImplementationName = "upstream-kube-controller-manager"
