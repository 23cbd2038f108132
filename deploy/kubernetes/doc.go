// Package kubernetes holds corral's Kubernetes manifests (*.yaml) and the
// test that checks them against the Kubernetes API types and the corral
// CLI. It is a module of its own so that the main module's go.mod carries
// no Kubernetes dependency.
package kubernetes
