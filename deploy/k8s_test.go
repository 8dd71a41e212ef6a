package deploy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// manifests are the objects of deploy/k8s/minikafka.yaml, each decoded
// strictly into its Kubernetes API type: an unknown or misspelt field, a
// value of the wrong type, a malformed quantity or an unknown kind fails.
type manifests struct {
	services []*corev1.Service
	sts      *appsv1.StatefulSet
	pdb      *policyv1.PodDisruptionBudget
}

func decodeManifests(t *testing.T, path string) manifests {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	require.NoError(t, appsv1.AddToScheme(scheme))
	require.NoError(t, policyv1.AddToScheme(scheme))
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var m manifests
	r := utilyaml.NewYAMLReader(bufioReader(raw))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		require.NoError(t, err, "document %d of %s", i, path)
		switch o := obj.(type) {
		case *corev1.Service:
			m.services = append(m.services, o)
		case *appsv1.StatefulSet:
			require.Nil(t, m.sts, "one StatefulSet")
			m.sts = o
		case *policyv1.PodDisruptionBudget:
			require.Nil(t, m.pdb, "one PodDisruptionBudget")
			m.pdb = o
		default:
			t.Fatalf("document %d: unexpected %s", i, gvk)
		}
	}
	require.NotNil(t, m.sts, "a StatefulSet")
	require.NotNil(t, m.pdb, "a PodDisruptionBudget")
	return m
}

// TestKubernetesManifests: deploy/k8s decodes strictly into the API types
// and holds together as the brokers need: a headless Service that
// publishes not-ready pods names the StatefulSet's pods; selectors select
// the pod template; readiness is /healthz on the metrics port; every pod
// mounts its own claim as the data directory; node ids come from the
// ordinal and the voters are exactly the pods 0..replicas-1; every
// MINIKAFKA_ variable is a flag of cmd/broker.
func TestKubernetesManifests(t *testing.T) {
	m := decodeManifests(t, filepath.Join("k8s", "minikafka.yaml"))
	sts := m.sts
	spec := sts.Spec
	pod := spec.Template
	podLabels := labels.Set(pod.Labels)

	sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(podLabels), "the StatefulSet's selector selects its pods")
	var headless *corev1.Service
	for _, s := range m.services {
		assert.Empty(t, validation.IsDNS1123Label(s.Name), "service name %q", s.Name)
		assert.True(t, labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels), "service %s selects the brokers", s.Name)
		if s.Name == spec.ServiceName {
			headless = s
		}
	}
	require.NotNil(t, headless, "the StatefulSet's serviceName %q is a Service of the file", spec.ServiceName)
	assert.Equal(t, corev1.ClusterIPNone, headless.Spec.ClusterIP, "headless")
	assert.True(t, headless.Spec.PublishNotReadyAddresses, "voters must resolve each other before any is ready")
	assert.Equal(t, appsv1.ParallelPodManagement, spec.PodManagementPolicy, "pod 0 cannot be ready before a quorum runs")

	pdbSel, err := metav1.LabelSelectorAsSelector(m.pdb.Spec.Selector)
	require.NoError(t, err)
	assert.True(t, pdbSel.Matches(podLabels), "the PodDisruptionBudget covers the brokers")
	require.NotNil(t, m.pdb.Spec.MaxUnavailable)
	assert.Equal(t, intstr.FromInt32(1), *m.pdb.Spec.MaxUnavailable)

	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		assert.Empty(t, validation.IsValidPortNum(int(p.ContainerPort)), "port %s", p.Name)
		ports[p.Name] = p.ContainerPort
	}
	portOf := func(p intstr.IntOrString) int32 {
		if p.Type == intstr.String {
			require.Contains(t, ports, p.StrVal, "a named container port")
			return ports[p.StrVal]
		}
		return p.IntVal
	}
	listens := func(name string) int32 {
		_, port, ok := strings.Cut(env[name], ":")
		require.True(t, ok, "%s=%q is host:port", name, env[name])
		var n int32
		_, err := fmt.Sscan(port, &n)
		require.NoError(t, err, name)
		return n
	}

	rp := c.ReadinessProbe
	require.NotNil(t, rp, "a readiness probe")
	require.NotNil(t, rp.HTTPGet, "readiness over HTTP")
	assert.Equal(t, "/healthz", rp.HTTPGet.Path)
	assert.Equal(t, listens("MINIKAFKA_METRICS_ADDR"), portOf(rp.HTTPGet.Port), "readiness probes the metrics listener")
	assert.Equal(t, listens("MINIKAFKA_ADDR"), ports["kafka"])
	assert.Equal(t, listens("MINIKAFKA_CONTROLLER_ADDR"), ports["controller"])
	for _, sp := range headless.Spec.Ports {
		assert.Contains(t, ports, sp.TargetPort.StrVal, "service port %s targets a container port", sp.Name)
	}

	require.Len(t, spec.VolumeClaimTemplates, 1)
	claim := spec.VolumeClaimTemplates[0]
	assert.False(t, claim.Spec.Resources.Requests.Storage().IsZero(), "the claim asks for storage")
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: claim.Name, MountPath: env["MINIKAFKA_DIR"]},
		"each pod's claim is its data directory")

	assert.True(t, slices.Contains(c.Args, "-node-id-from-ordinal") || env["MINIKAFKA_NODE_ID_FROM_ORDINAL"] == "true",
		"node ids from the pod ordinal")
	require.NotNil(t, spec.Replicas)
	var want []string
	for i := range *spec.Replicas {
		want = append(want, fmt.Sprintf("%d@%s-%d.%s.$(POD_NAMESPACE).svc:%d", i, sts.Name, i, spec.ServiceName, ports["controller"]))
	}
	assert.Equal(t, strings.Join(want, ","), env["MINIKAFKA_CONTROLLERS"], "one voter per pod, named by its ordinal")
	assert.Equal(t, fmt.Sprintf("$(POD_NAME).%s.$(POD_NAMESPACE).svc:%d", spec.ServiceName, ports["kafka"]), env["MINIKAFKA_ADVERTISED_ADDR"])
	assert.NotNil(t, pod.Spec.SecurityContext.RunAsNonRoot)
	assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot, "runs as non-root")

	flags := brokerFlags(t)
	for name := range env {
		if rest, ok := strings.CutPrefix(name, "MINIKAFKA_"); ok {
			flag := strings.ToLower(strings.ReplaceAll(rest, "_", "-"))
			assert.Contains(t, flags, flag, "%s is cmd/broker's -%s", name, flag)
		}
	}
	for _, a := range c.Args {
		assert.Contains(t, flags, strings.TrimPrefix(a, "-"), "argument %s", a)
	}
}

// brokerFlags are the flag names cmd/broker's -help lists.
func brokerFlags(t *testing.T) []string {
	t.Helper()
	out, _ := exec.Command("go", "run", "github.com/minikafka/minikafka/cmd/broker", "-help").CombinedOutput()
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	require.NotEmpty(t, names, "cmd/broker -help lists its flags: %s", out)
	return names
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
