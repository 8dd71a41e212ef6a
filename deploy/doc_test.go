// Package deploy_test checks what deploy/ ships: the image and the compose
// cluster, started for real when a Docker engine answers (skipped, with
// the reason, where none does), and the Kubernetes manifests, decoded
// strictly into the Kubernetes API types and checked for what the brokers
// need of them.
package deploy_test
