module hpa-conformance/adapters/upstream

go 1.26

require k8s.io/kubernetes v1.36.4
