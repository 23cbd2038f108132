package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// object is one decoded document of a manifest file.
type object struct {
	where string // file#document, for messages
	kind  string
	name  string
	ns    string
	obj   any // *appsv1.StatefulSet, *corev1.Service, ...
}

// kinds are the API types the manifests may hold, by apiVersion and kind.
// Anything else fails the test: a kind missing here is a kind nobody
// checked.
var kinds = map[string]func() any{
	"v1/Namespace":                       func() any { return &corev1.Namespace{} },
	"v1/Service":                         func() any { return &corev1.Service{} },
	"v1/Secret":                          func() any { return &corev1.Secret{} },
	"v1/ConfigMap":                       func() any { return &corev1.ConfigMap{} },
	"apps/v1/StatefulSet":                func() any { return &appsv1.StatefulSet{} },
	"apps/v1/Deployment":                 func() any { return &appsv1.Deployment{} },
	"apps/v1/DaemonSet":                  func() any { return &appsv1.DaemonSet{} },
	"policy/v1/PodDisruptionBudget":      func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy": func() any { return &networkingv1.NetworkPolicy{} },
}

// decodeStrict decodes one YAML document into obj, failing on unknown and
// duplicate fields. sigs.k8s.io/yaml's strict mode goes through
// encoding/json, which matches field names case-insensitively, so
// "Replicas:" would pass it; the API server decodes case-sensitively, so
// the document is decoded a second time with sigs.k8s.io/json, as the API
// server does, to catch that too.
func decodeStrict(doc []byte, obj any) error {
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return err
	}
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("%v", strictErrs)
	}
	return nil
}

// splitDocuments splits a multi-document YAML file at its "---" lines and
// drops documents that hold only comments or nothing.
func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if hasContent(cur.Bytes()) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if strings.TrimRight(line, " \t\r\n") == "---" {
			flush()
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return docs
}

func hasContent(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

// loadManifests decodes every *.yaml file in this directory.
func loadManifests(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if others, _ := filepath.Glob("*.yml"); len(others) > 0 {
		t.Fatalf("%v: name manifests *.yaml, which this test reads", others)
	}
	if len(files) == 0 {
		t.Fatal("no *.yaml manifests found")
	}
	var objs []object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(b) {
			where := fmt.Sprintf("%s#%d", f, i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
			if !ok {
				t.Fatalf("%s: unknown kind %q (apiVersion %q): add it to kinds in this test, with the checks it needs",
					where, tm.Kind, tm.APIVersion)
			}
			obj := newObj()
			if err := decodeStrict(doc, obj); err != nil {
				t.Fatalf("%s (%s): %v", where, tm.Kind, err)
			}
			meta := objectMeta(obj)
			if meta.Name == "" {
				t.Fatalf("%s: %s without metadata.name", where, tm.Kind)
			}
			objs = append(objs, object{where: where, kind: tm.Kind, name: meta.Name, ns: meta.Namespace, obj: obj})
		}
	}
	return objs
}

func objectMeta(obj any) metav1.ObjectMeta {
	switch o := obj.(type) {
	case *corev1.Namespace:
		return o.ObjectMeta
	case *corev1.Service:
		return o.ObjectMeta
	case *corev1.Secret:
		return o.ObjectMeta
	case *corev1.ConfigMap:
		return o.ObjectMeta
	case *appsv1.StatefulSet:
		return o.ObjectMeta
	case *appsv1.Deployment:
		return o.ObjectMeta
	case *appsv1.DaemonSet:
		return o.ObjectMeta
	case *policyv1.PodDisruptionBudget:
		return o.ObjectMeta
	case *networkingv1.NetworkPolicy:
		return o.ObjectMeta
	}
	panic(fmt.Sprintf("objectMeta: %T", obj))
}

// workload is a pod template with where it comes from.
type workload struct {
	where    string
	kind     string
	name     string
	ns       string
	selector *metav1.LabelSelector
	tmpl     corev1.PodTemplateSpec
	claims   []corev1.PersistentVolumeClaim // StatefulSet volumeClaimTemplates
}

func workloads(objs []object) []workload {
	var out []workload
	for _, o := range objs {
		w := workload{where: o.where, kind: o.kind, name: o.name, ns: o.ns}
		switch v := o.obj.(type) {
		case *appsv1.StatefulSet:
			w.selector, w.tmpl, w.claims = v.Spec.Selector, v.Spec.Template, v.Spec.VolumeClaimTemplates
		case *appsv1.Deployment:
			w.selector, w.tmpl = v.Spec.Selector, v.Spec.Template
		case *appsv1.DaemonSet:
			w.selector, w.tmpl = v.Spec.Selector, v.Spec.Template
		default:
			continue
		}
		out = append(out, w)
	}
	return out
}

func find[T any](t *testing.T, objs []object, name string) T {
	t.Helper()
	for _, o := range objs {
		if v, ok := o.obj.(T); ok && o.name == name {
			return v
		}
	}
	var zero T
	t.Fatalf("no %T named %q in the manifests", zero, name)
	return zero
}

func TestDecodeIsStrict(t *testing.T) {
	// The checks below are only worth something if a misspelt field, a
	// wrongly cased one, a duplicate and a field at the wrong level fail.
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec: {replicaz: 3}\n",
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec: {Replicas: 3}\n",
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec: {replicas: 3, replicas: 2}\n",
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: c, readOnlyRootFilesystem: true}]}}}\n",
	} {
		if err := decodeStrict([]byte(doc), &appsv1.StatefulSet{}); err == nil {
			t.Errorf("decodeStrict accepted %q", doc)
		}
	}
	docs := splitDocuments([]byte("# only a comment\n---\na: 1\n---\n\n---\nb: 2\n"))
	if len(docs) != 2 {
		t.Errorf("splitDocuments: %d documents, want 2: %q", len(docs), docs)
	}
}

func TestManifests(t *testing.T) {
	objs := loadManifests(t)
	var namespace string
	for _, o := range objs {
		if o.kind == "Namespace" {
			if namespace != "" {
				t.Fatalf("%s: a second Namespace", o.where)
			}
			namespace = o.name
		}
	}
	if namespace == "" {
		t.Fatal("no Namespace in the manifests")
	}
	for _, o := range objs {
		if o.kind != "Namespace" && o.ns != namespace {
			t.Errorf("%s: %s %s is in namespace %q, want %q (every object names it, so kubectl apply -f puts them together)",
				o.where, o.kind, o.name, o.ns, namespace)
		}
	}
	// What the rest of the test and the README rely on.
	find[*appsv1.StatefulSet](t, objs, "corral")
	find[*appsv1.Deployment](t, objs, "corral-worker")
	find[*corev1.Service](t, objs, "corral")
	find[*corev1.Service](t, objs, "corral-api")
	find[*policyv1.PodDisruptionBudget](t, objs, "corral")
}

func selects(t *testing.T, where string, sel *metav1.LabelSelector, podLabels map[string]string) bool {
	t.Helper()
	if sel == nil {
		t.Fatalf("%s: no selector", where)
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("%s: selector: %v", where, err)
	}
	if s.Empty() {
		t.Fatalf("%s: an empty selector selects every pod", where)
	}
	return s.Matches(labels.Set(podLabels))
}

func TestCrossReferences(t *testing.T) {
	objs := loadManifests(t)
	ws := workloads(objs)
	for _, w := range ws {
		if !selects(t, w.where, w.selector, w.tmpl.Labels) {
			t.Errorf("%s: %s %s: its selector does not select its own pod template", w.where, w.kind, w.name)
		}
		// Two workloads whose pods both selectors match would fight over them.
		for _, other := range ws {
			if other.name != w.name && selects(t, w.where, w.selector, other.tmpl.Labels) {
				t.Errorf("%s: %s %s also selects the pods of %s %s", w.where, w.kind, w.name, other.kind, other.name)
			}
		}
	}

	for _, o := range objs {
		switch v := o.obj.(type) {
		case *corev1.Service:
			if len(v.Spec.Selector) == 0 {
				t.Errorf("%s: Service %s selects nothing", o.where, o.name)
				continue
			}
			var matched []workload
			for _, w := range ws {
				if labels.SelectorFromSet(v.Spec.Selector).Matches(labels.Set(w.tmpl.Labels)) {
					matched = append(matched, w)
				}
			}
			if len(matched) != 1 {
				t.Errorf("%s: Service %s selects the pods of %d workloads, want 1", o.where, o.name, len(matched))
				continue
			}
			for _, p := range v.Spec.Ports {
				if p.TargetPort.StrVal == "" {
					t.Errorf("%s: Service %s port %s: name the container port in targetPort", o.where, o.name, p.Name)
					continue
				}
				cp, ok := containerPort(matched[0].tmpl.Spec, p.TargetPort.StrVal)
				if !ok {
					t.Errorf("%s: Service %s targets port %q, which %s %s does not expose", o.where, o.name, p.TargetPort.StrVal,
						matched[0].kind, matched[0].name)
				} else if cp.Protocol != p.Protocol {
					t.Errorf("%s: Service %s port %s is %s, the container port is %s", o.where, o.name, p.Name, p.Protocol, cp.Protocol)
				}
			}
		case *policyv1.PodDisruptionBudget:
			sts := find[*appsv1.StatefulSet](t, objs, "corral")
			if !selects(t, o.where, v.Spec.Selector, sts.Spec.Template.Labels) {
				t.Errorf("%s: PodDisruptionBudget %s does not select the controllers", o.where, o.name)
			}
			if v.Spec.MaxUnavailable == nil || v.Spec.MaxUnavailable.String() != "1" || v.Spec.MinAvailable != nil {
				t.Errorf("%s: PodDisruptionBudget %s: want maxUnavailable 1 and no minAvailable", o.where, o.name)
			}
		}
	}

	sts := find[*appsv1.StatefulSet](t, objs, "corral")
	headless := find[*corev1.Service](t, objs, sts.Spec.ServiceName)
	if headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service %s (the StatefulSet's serviceName) must be headless (clusterIP: None): peers need each pod's own name",
			headless.Name)
	}
	if !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("Service %s must publish not-ready addresses: a controller is ready only once the quorum, which finds its peers by these names, has a leader",
			headless.Name)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("StatefulSet %s: podManagementPolicy must be Parallel: with OrderedReady the first controller waits alone for a quorum", sts.Name)
	}
	if !selects(t, "headless Service", metav1.SetAsLabelSelector(headless.Spec.Selector), sts.Spec.Template.Labels) {
		t.Errorf("Service %s does not select StatefulSet %s's pods", headless.Name, sts.Name)
	}

	// Every volume mount has a volume (or a claim template), every named
	// probe port exists, and every $(VAR) in the arguments is defined:
	// Kubernetes leaves an undefined one as it is, which corral would then
	// take literally.
	for _, w := range ws {
		vols := map[string]bool{}
		for _, v := range w.tmpl.Spec.Volumes {
			vols[v.Name] = true
		}
		for _, c := range w.claims {
			vols[c.Name] = true
		}
		for _, c := range w.tmpl.Spec.Containers {
			for _, m := range c.VolumeMounts {
				if !vols[m.Name] {
					t.Errorf("%s: container %s mounts volume %q, which %s %s does not define", w.where, c.Name, m.Name, w.kind, w.name)
				}
			}
			for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
				if p == nil || p.HTTPGet == nil {
					continue
				}
				if _, ok := containerPort(w.tmpl.Spec, p.HTTPGet.Port.StrVal); !ok {
					t.Errorf("%s: container %s probes port %q, which it does not expose", w.where, c.Name, p.HTTPGet.Port.String())
				}
			}
			env := map[string]bool{}
			for _, e := range c.Env {
				env[e.Name] = true
			}
			for _, a := range append(slices.Clone(c.Command), c.Args...) {
				for _, m := range varRef.FindAllStringSubmatch(a, -1) {
					if !env[m[1]] {
						t.Errorf("%s: container %s: argument %q uses $(%s), which its env does not define", w.where, c.Name, a, m[1])
					}
				}
			}
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func containerPort(spec corev1.PodSpec, name string) (corev1.ContainerPort, bool) {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return p, true
			}
		}
	}
	return corev1.ContainerPort{}, false
}

// flagValue returns the value of --name=VALUE in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestControllerPeers(t *testing.T) {
	objs := loadManifests(t)
	sts := find[*appsv1.StatefulSet](t, objs, "corral")
	c := sts.Spec.Template.Spec.Containers[0]
	start := int32(0)
	if sts.Spec.Ordinals != nil {
		start = sts.Spec.Ordinals.Start
	}
	if start < 1 {
		t.Fatalf("StatefulSet %s: ordinals start at %d, but a controller's node id (its ordinal) must be positive: set spec.ordinals.start: 1", sts.Name, start)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas%2 == 0 {
		t.Fatalf("StatefulSet %s: want an odd number of controllers (3 or 5), got %v", sts.Name, sts.Spec.Replicas)
	}
	cluster, ok := containerPort(sts.Spec.Template.Spec, "cluster")
	if !ok || cluster.Protocol != corev1.ProtocolUDP {
		t.Fatalf("the controller container needs a UDP port named cluster (QUIC), got %+v", cluster)
	}
	live, ok := containerPort(sts.Spec.Template.Spec, "liveness")
	if !ok || live.Protocol != corev1.ProtocolTCP || live.ContainerPort != cluster.ContainerPort {
		t.Fatalf("the controller container needs a TCP port named liveness on the cluster port %d (the liveness link), got %+v", cluster.ContainerPort, live)
	}

	// --controllers lists every pod, by ordinal, at its headless name.
	want := map[string]string{}
	var addrs []string
	for i := start; i < start+*sts.Spec.Replicas; i++ {
		addr := fmt.Sprintf("%s-%d.%s:%d", sts.Name, i, sts.Spec.ServiceName, cluster.ContainerPort)
		want[strconv.Itoa(int(i))] = addr
		addrs = append(addrs, addr)
	}
	peers, ok := flagValue(c.Args, "controllers")
	if !ok {
		t.Fatal("the controllers have no --controllers")
	}
	got := map[string]string{}
	for _, p := range strings.Split(peers, ",") {
		id, addr, _ := strings.Cut(p, "@")
		got[id] = addr
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("--controllers=%s, want the StatefulSet's pods %v", peers, want)
	}
	if v, _ := flagValue(c.Args, "cluster-addr"); !strings.HasSuffix(v, fmt.Sprintf(":%d", cluster.ContainerPort)) {
		t.Errorf("--cluster-addr=%s does not listen on the cluster port %d", v, cluster.ContainerPort)
	}

	// The node id is the pod's ordinal, from the label the StatefulSet
	// controller sets.
	if v, _ := flagValue(c.Args, "node-id"); v != "$(POD_INDEX)" {
		t.Errorf("--node-id=%s, want $(POD_INDEX)", v)
	}
	var podIndex *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "POD_INDEX" {
			podIndex = &c.Env[i]
		}
	}
	if podIndex == nil || podIndex.ValueFrom == nil || podIndex.ValueFrom.FieldRef == nil ||
		podIndex.ValueFrom.FieldRef.FieldPath != "metadata.labels['apps.kubernetes.io/pod-index']" {
		t.Errorf("POD_INDEX must come from the pod-index label, got %+v", podIndex)
	}

	// The workers look for the same controllers.
	w := find[*appsv1.Deployment](t, objs, "corral-worker")
	wc, _ := flagValue(w.Spec.Template.Spec.Containers[0].Args, "controllers")
	if wc != strings.Join(addrs, ",") {
		t.Errorf("workers: --controllers=%s, want %s", wc, strings.Join(addrs, ","))
	}

	// Each controller finds its own certificate: the files the TLS flags
	// name exist in the mounted volumes, for every ordinal.
	for i := start; i < start+*sts.Spec.Replicas; i++ {
		args := slices.Clone(c.Args)
		for j := range args {
			args[j] = strings.ReplaceAll(args[j], "$(POD_INDEX)", strconv.Itoa(int(i)))
		}
		checkFiles(t, fmt.Sprintf("controller %d", i), sts.Spec.Template.Spec, c, args)
	}
	checkFiles(t, "worker", w.Spec.Template.Spec, w.Spec.Template.Spec.Containers[0], w.Spec.Template.Spec.Containers[0].Args)
}

// filesOf are the files corral reads under each path flag.
var filesOf = map[string][]string{
	"tls-dir":        {"ca.pem", "node.pem", "node-key.pem"},
	"ca-dir":         {"ca.pem", "ca-key.pem"},
	"http-tls-cert":  {""},
	"http-tls-key":   {""},
	"api-token-file": {""},
	"ca-cert":        {""},
}

// checkFiles checks that every file a path flag in args names is an item
// of a Secret or ConfigMap volume mounted in c, and that --data-dir is a
// writable mount.
func checkFiles(t *testing.T, who string, spec corev1.PodSpec, c corev1.Container, args []string) {
	t.Helper()
	for flag, files := range filesOf {
		dir, ok := flagValue(args, flag)
		if !ok {
			continue
		}
		for _, f := range files {
			p := path.Join(dir, f)
			if !mountedFile(spec, c, p) {
				t.Errorf("%s: --%s: %s is not a file of any volume mounted in container %s", who, flag, p, c.Name)
			}
		}
	}
	dataDir, ok := flagValue(args, "data-dir")
	if !ok {
		t.Errorf("%s: no --data-dir", who)
		return
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == dataDir {
			if m.ReadOnly {
				t.Errorf("%s: --data-dir %s is mounted read-only", who, dataDir)
			}
			return
		}
	}
	t.Errorf("%s: --data-dir %s is not a volume mount: the root file system is read-only", who, dataDir)
}

func mountedFile(spec corev1.PodSpec, c corev1.Container, p string) bool {
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(p, m.MountPath+"/")
		if !ok {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name {
				continue
			}
			var items []corev1.KeyToPath
			switch {
			case v.Secret != nil:
				items = v.Secret.Items
			case v.ConfigMap != nil:
				items = v.ConfigMap.Items
			default:
				return false
			}
			for _, it := range items {
				if it.Path == rel {
					return true
				}
			}
		}
	}
	return false
}

// documentedSecrets reads the `kubectl create secret generic NAME
// --from-file=KEY=... --from-literal=KEY=...` commands in README.md.
func documentedSecrets(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ") // join continued lines
	secrets := map[string]map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		_, rest, ok := strings.Cut(line, "create secret generic ")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		name := fields[0]
		keys := map[string]bool{}
		for _, f := range fields[1:] {
			for _, prefix := range []string{"--from-file=", "--from-literal="} {
				if kv, ok := strings.CutPrefix(f, prefix); ok {
					if k, _, ok := strings.Cut(kv, "="); ok {
						keys[k] = true
					}
				}
			}
		}
		if len(keys) == 0 {
			t.Fatalf("README.md: 'create secret generic %s' names no KEY=: name every key (--from-file=KEY=FILE)", name)
		}
		secrets[name] = keys
	}
	if len(secrets) == 0 {
		t.Fatal("README.md has no 'kubectl create secret generic' commands")
	}
	return secrets
}

func TestSecretsAreDocumented(t *testing.T) {
	objs := loadManifests(t)
	documented := documentedSecrets(t)
	used := map[string]bool{}
	check := func(where, name, key string) {
		used[name] = true
		keys, ok := documented[name]
		switch {
		case !ok:
			t.Errorf("%s: Secret %s is not made by any command in README.md", where, name)
		case key != "" && !keys[key]:
			t.Errorf("%s: Secret %s has no key %q in README.md's command", where, name, key)
		}
	}
	for _, w := range workloads(objs) {
		for _, v := range w.tmpl.Spec.Volumes {
			if v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				t.Errorf("%s: volume %s: list the Secret's items, so that the test (and the reader) knows the files", w.where, v.Name)
			}
			check(w.where, v.Secret.SecretName, "")
			for _, it := range v.Secret.Items {
				check(w.where, v.Secret.SecretName, it.Key)
			}
		}
		for _, c := range w.tmpl.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					check(w.where, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
				}
			}
			for _, ef := range c.EnvFrom {
				if ef.SecretRef != nil {
					check(w.where, ef.SecretRef.Name, "")
				}
			}
		}
	}
	for name := range documented {
		if !used[name] {
			t.Errorf("README.md makes Secret %s, which no manifest uses", name)
		}
	}
}

// corralRun is what `corral run` takes: its flags and the environment
// variables behind them.
type corralRun struct {
	flags map[string]bool
	env   map[string]bool
}

var (
	runOnce sync.Once
	runHelp corralRun
	runErr  error
)

// corralRunFlags builds corral from this repository (or takes $CORRAL_BIN)
// and reads `corral run --help`. Reading the real binary's help keeps this
// module free of a dependency on the main one, whose go.mod replaces
// quic-go with a local copy that a requiring module would have to repeat.
func corralRunFlags(t *testing.T) corralRun {
	t.Helper()
	runOnce.Do(func() {
		bin := os.Getenv("CORRAL_BIN")
		if bin == "" {
			root, err := filepath.Abs("../..")
			if err != nil {
				runErr = err
				return
			}
			bin = filepath.Join(os.TempDir(), fmt.Sprintf("corral-manifests-test-%d", os.Getpid()))
			defer os.Remove(bin)
			build := exec.Command("go", "build", "-o", bin, ".")
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				runErr = fmt.Errorf("go build in %s: %v\n%s", root, err, out)
				return
			}
		}
		out, err := exec.Command(bin, "run", "--help").CombinedOutput()
		if err != nil {
			runErr = fmt.Errorf("%s run --help: %v\n%s", bin, err, out)
			return
		}
		runHelp = parseHelp(string(out))
	})
	if runErr != nil {
		t.Fatal(runErr)
	}
	// A change in the help's layout must fail here, not make every flag
	// look unknown (or, worse, every check pass).
	for _, f := range []string{"role", "node-id", "controllers", "data-dir", "tls-dir"} {
		if !runHelp.flags[f] {
			t.Fatalf("could not find --%s in 'corral run --help': has its layout changed? found %v", f, runHelp.flags)
		}
	}
	if !runHelp.env["CORRAL_DATA_DIR"] {
		t.Fatalf("could not find $CORRAL_DATA_DIR in 'corral run --help': found %v", runHelp.env)
	}
	return runHelp
}

var (
	helpFlag = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z](?: value)?, )?--([a-z0-9][a-z0-9-]*)`)
	helpEnv  = regexp.MustCompile(`\$(CORRAL_[A-Z0-9_]+)`)
)

// parseHelp reads urfave/cli's help: "   --data-dir value  ... [$CORRAL_DATA_DIR]".
func parseHelp(help string) corralRun {
	r := corralRun{flags: map[string]bool{}, env: map[string]bool{}}
	for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
		r.flags[m[1]] = true
	}
	for _, m := range helpEnv.FindAllStringSubmatch(help, -1) {
		r.env[m[1]] = true
	}
	return r
}

func TestParseHelp(t *testing.T) {
	r := parseHelp("OPTIONS:\n   --role value      controller [$CORRAL_ROLE]\n   --http-insecure   allow (default: false) [$CORRAL_HTTP_INSECURE]\n   --help, -h        show help\n")
	if !r.flags["role"] || !r.flags["http-insecure"] || !r.flags["help"] || len(r.flags) != 3 {
		t.Errorf("flags %v", r.flags)
	}
	if !r.env["CORRAL_ROLE"] || !r.env["CORRAL_HTTP_INSECURE"] || len(r.env) != 2 {
		t.Errorf("env %v", r.env)
	}
}

func TestFlagsExist(t *testing.T) {
	objs := loadManifests(t)
	run := corralRunFlags(t)
	for _, w := range workloads(objs) {
		for _, c := range w.tmpl.Spec.Containers {
			if !slices.Equal(c.Command, []string{"/corral"}) {
				t.Errorf("%s: container %s: command %q, want [/corral] (the image's binary)", w.where, c.Name, c.Command)
			}
			if len(c.Args) == 0 || c.Args[0] != "run" {
				t.Errorf("%s: container %s: the arguments must start with run, got %q", w.where, c.Name, c.Args)
				continue
			}
			for _, a := range c.Args[1:] {
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if !strings.HasPrefix(a, "--") || !run.flags[name] {
					t.Errorf("%s: container %s: %q is not a flag of 'corral run'", w.where, c.Name, a)
				}
			}
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "CORRAL_") && !run.env[e.Name] {
					t.Errorf("%s: container %s: 'corral run' reads no variable %s", w.where, c.Name, e.Name)
				}
			}
		}
	}
}

// workerCaps are what a root worker needs to run tasks as another user
// (README.md, "Workers and task users"); all are in Pod Security baseline.
var workerCaps = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"}

func TestSecurity(t *testing.T) {
	objs := loadManifests(t)
	for _, w := range workloads(objs) {
		spec := w.tmpl.Spec
		psc := spec.SecurityContext
		if psc == nil {
			psc = &corev1.PodSecurityContext{}
		}
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("%s: set automountServiceAccountToken: false: corral never calls the Kubernetes API", w.where)
		}
		if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
			t.Errorf("%s: set enableServiceLinks: false: corral reads CORRAL_* variables, and a Service named corral injects some", w.where)
		}
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			t.Errorf("%s: no host namespaces", w.where)
		}
		for _, v := range spec.Volumes {
			if v.HostPath != nil {
				t.Errorf("%s: volume %s is a hostPath", w.where, v.Name)
			}
		}
		isWorker := w.tmpl.Labels["app.kubernetes.io/component"] == "worker"
		for _, c := range spec.Containers {
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("%s: container %s has no securityContext", w.where, c.Name)
				continue
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: container %s: set allowPrivilegeEscalation: false", w.where, c.Name)
			}
			if sc.Privileged != nil && *sc.Privileged {
				t.Errorf("%s: container %s is privileged", w.where, c.Name)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: container %s: set readOnlyRootFilesystem: true", w.where, c.Name)
			}
			if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("%s: container %s: drop ALL capabilities", w.where, c.Name)
			}
			seccomp := psc.SeccompProfile
			if sc.SeccompProfile != nil {
				seccomp = sc.SeccompProfile
			}
			if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("%s: container %s: seccompProfile RuntimeDefault", w.where, c.Name)
			}
			nonRoot := psc.RunAsNonRoot
			if sc.RunAsNonRoot != nil {
				nonRoot = sc.RunAsNonRoot
			}
			var added []corev1.Capability
			if sc.Capabilities != nil {
				added = sc.Capabilities.Add
			}
			if isWorker {
				for _, a := range added {
					if !slices.Contains(workerCaps, a) {
						t.Errorf("%s: worker container %s adds %s; a worker needs only %v", w.where, c.Name, a, workerCaps)
					}
				}
				// A root worker switches users for its tasks: with one of
				// these missing, tasks fail to start or outlive their stop.
				if uid := runAsUser(psc, sc); uid != nil && *uid == 0 {
					for _, need := range workerCaps {
						if !slices.Contains(added, need) {
							t.Errorf("%s: worker container %s runs as root without %s, which starting tasks as --task-user needs", w.where, c.Name, need)
						}
					}
				}
			} else {
				// The API is off loopback: HTTPS and a token, never --http-insecure.
				for _, f := range []string{"http-tls-cert", "http-tls-key", "api-token-file"} {
					if _, ok := flagValue(c.Args, f); !ok {
						t.Errorf("%s: container %s: no --%s", w.where, c.Name, f)
					}
				}
				if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--http-insecure") }) {
					t.Errorf("%s: container %s: --http-insecure", w.where, c.Name)
				}
				if nonRoot == nil || !*nonRoot {
					t.Errorf("%s: container %s: set runAsNonRoot: true", w.where, c.Name)
				}
				if len(added) > 0 {
					t.Errorf("%s: container %s adds capabilities %v; a controller needs none", w.where, c.Name, added)
				}
				checkGoMemLimit(t, w.where, c)
			}
			if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
				t.Errorf("%s: container %s has no memory limit", w.where, c.Name)
			}

			// Probes: /readyz gates traffic and rollouts, /healthz restarts
			// a stuck process. The controller API is HTTPS whenever it has
			// a certificate (it refuses plain HTTP off loopback).
			scheme := corev1.URISchemeHTTP
			if _, ok := flagValue(c.Args, "http-tls-cert"); ok {
				scheme = corev1.URISchemeHTTPS
			}
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}, {"startup", c.StartupProbe, "/healthz"}} {
				switch {
				case p.probe == nil || p.probe.HTTPGet == nil:
					t.Errorf("%s: container %s: no HTTP %s probe", w.where, c.Name, p.name)
				case p.probe.HTTPGet.Path != p.path:
					t.Errorf("%s: container %s: %s probe on %s, want %s", w.where, c.Name, p.name, p.probe.HTTPGet.Path, p.path)
				case cmpScheme(p.probe.HTTPGet.Scheme) != scheme:
					t.Errorf("%s: container %s: %s probe scheme %s, want %s", w.where, c.Name, p.name, p.probe.HTTPGet.Scheme, scheme)
				}
			}
		}
	}
}

func runAsUser(psc *corev1.PodSecurityContext, sc *corev1.SecurityContext) *int64 {
	if sc.RunAsUser != nil {
		return sc.RunAsUser
	}
	return psc.RunAsUser
}

// cmpScheme is a probe's scheme, HTTP when unset (the kubelet's default).
func cmpScheme(s corev1.URIScheme) corev1.URIScheme {
	if s == "" {
		return corev1.URISchemeHTTP
	}
	return s
}

// TestNamesAreValid applies the API server's name rules that strict
// decoding cannot see: a Service name is a DNS label, port names are at
// most 15 characters, label keys and values are qualified names, and so
// on.
func TestNamesAreValid(t *testing.T) {
	objs := loadManifests(t)
	check := func(where, what, value string, errs []string) {
		t.Helper()
		if len(errs) > 0 {
			t.Errorf("%s: %s %q: %s", where, what, value, strings.Join(errs, "; "))
		}
	}
	checkLabels := func(where string, l map[string]string) {
		t.Helper()
		for k, v := range l {
			check(where, "label key", k, validation.IsQualifiedName(k))
			check(where, "label value", v, validation.IsValidLabelValue(v))
		}
	}
	for _, o := range objs {
		meta := objectMeta(o.obj)
		checkLabels(o.where, meta.Labels)
		switch v := o.obj.(type) {
		case *corev1.Service:
			check(o.where, "Service name", o.name, validation.IsDNS1035Label(o.name))
			for _, p := range v.Spec.Ports {
				check(o.where, "port name", p.Name, validation.IsValidPortName(p.Name))
			}
		case *corev1.Namespace:
			check(o.where, "Namespace name", o.name, validation.IsDNS1123Label(o.name))
		default:
			check(o.where, o.kind+" name", o.name, validation.IsDNS1123Subdomain(o.name))
		}
	}
	for _, w := range workloads(objs) {
		checkLabels(w.where, w.tmpl.Labels)
		if w.kind == "StatefulSet" {
			// Pod names (NAME-ORDINAL) are DNS labels under the headless Service.
			check(w.where, "StatefulSet name", w.name, validation.IsDNS1123Label(w.name+"-99"))
		}
		for _, v := range w.tmpl.Spec.Volumes {
			check(w.where, "volume name", v.Name, validation.IsDNS1123Label(v.Name))
		}
		for _, c := range w.tmpl.Spec.Containers {
			check(w.where, "container name", c.Name, validation.IsDNS1123Label(c.Name))
			for _, p := range c.Ports {
				check(w.where, "container port name", p.Name, validation.IsValidPortName(p.Name))
			}
			for _, e := range c.Env {
				check(w.where, "env name", e.Name, validation.IsEnvVarName(e.Name))
			}
		}
	}
}

// checkGoMemLimit: a controller holds its state in the Go heap; its
// GOMEMLIMIT must sit under the container's memory limit (80-95 % of it),
// so the collector works harder before the OOM killer acts
// (docs/OPERATIONS.md, "Memory"). Raising one without the other fails.
func checkGoMemLimit(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		return // reported above
	}
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" })
	if i < 0 {
		t.Errorf("%s: controller container %s has no GOMEMLIMIT (set it to about 90%% of its memory limit)", where, c.Name)
		return
	}
	v := c.Env[i].Value
	units := map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "B": 1, "": 1}
	num := strings.TrimRight(v, "KMGiB")
	mult, known := units[strings.TrimPrefix(v, num)]
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || !known {
		t.Errorf("%s: container %s: GOMEMLIMIT %q is not a byte count like 3686MiB", where, c.Name, v)
		return
	}
	got, max := n*mult, limit.Value()
	if got < max*80/100 || got > max*95/100 {
		t.Errorf("%s: container %s: GOMEMLIMIT %s is %.0f%% of the memory limit %s; keep it at 80-95%%", where, c.Name, v, 100*float64(got)/float64(max), limit.String())
	}
}
