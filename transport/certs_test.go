package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// dirFiles lists the regular files in dir (nil if dir does not exist).
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestCreateCA(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ca") // created by CreateCA
	require.NoError(t, CreateCA(dir, "prod-1"))
	require.Equal(t, []string{CAKeyFile, CAFile}, dirFiles(t, dir))
	fi, err := os.Stat(filepath.Join(dir, CAKeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	ca, _, err := loadCA(filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile))
	require.NoError(t, err)
	require.True(t, ca.IsCA)
	require.Equal(t, []string{"corral://prod-1"}, urlStrings(ca.URIs))
	cluster, err := clusterOfCA(ca)
	require.NoError(t, err)
	require.Equal(t, "prod-1", cluster)

	// An empty name picks a random valid one, different every time.
	var names []string
	for range 2 {
		d := t.TempDir()
		require.NoError(t, CreateCA(d, ""))
		ca, _, err := loadCA(filepath.Join(d, CAFile), filepath.Join(d, CAKeyFile))
		require.NoError(t, err)
		name, err := clusterOfCA(ca)
		require.NoError(t, err)
		require.Regexp(t, regexp.MustCompile(`^c-[0-9a-f]{10}$`), name)
		names = append(names, name)
	}
	require.NotEqual(t, names[0], names[1])

	// A bad cluster name writes nothing.
	for _, bad := range []string{"Prod", "a/b", "-x", "a:1"} {
		d := filepath.Join(t.TempDir(), "ca")
		require.Error(t, CreateCA(d, bad), bad)
		require.Empty(t, dirFiles(t, d), bad)
	}
}

func TestCreateCARefusesToOverwrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, CreateCA(dir, "c1"))
	ca, key := readFile(t, filepath.Join(dir, CAFile)), readFile(t, filepath.Join(dir, CAKeyFile))

	err := CreateCA(dir, "c1")
	require.ErrorContains(t, err, "already exists")
	require.Error(t, CreateCA(dir, "c2"))
	require.Error(t, CreateCA(dir, ""))
	// Either half of a CA is enough to refuse.
	require.NoError(t, os.Remove(filepath.Join(dir, CAFile)))
	require.ErrorContains(t, CreateCA(dir, "c1"), CAKeyFile)
	require.NoError(t, os.WriteFile(filepath.Join(dir, CAFile), ca, 0o644))
	require.NoError(t, os.Rename(filepath.Join(dir, CAKeyFile), filepath.Join(dir, "saved")))
	require.ErrorContains(t, CreateCA(dir, "c1"), CAFile)
	require.NoError(t, os.Rename(filepath.Join(dir, "saved"), filepath.Join(dir, CAKeyFile)))

	require.Equal(t, ca, readFile(t, filepath.Join(dir, CAFile)))
	require.Equal(t, key, readFile(t, filepath.Join(dir, CAKeyFile)))
	require.Equal(t, []string{CAKeyFile, CAFile}, dirFiles(t, dir))
}

func TestIssueCert(t *testing.T) {
	t.Parallel()
	caDir := t.TempDir()
	require.NoError(t, CreateCA(caDir, "prod"))
	caPEM := readFile(t, filepath.Join(caDir, CAFile))

	for _, tc := range []struct {
		role   Role
		id     string
		usages []x509.ExtKeyUsage
	}{
		{RoleController, "3", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{RoleWorker, "w-1", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		out := filepath.Join(t.TempDir(), "node") // created by IssueCert
		got, err := IssueCert(caDir, tc.role, tc.id, []string{"10.0.0.3", "n3.example"}, out)
		require.NoError(t, err)
		want := Identity{Cluster: "prod", Role: tc.role, ID: tc.id}
		require.Equal(t, want, got)

		// The node gets its certificate, its key and the CA certificate;
		// never the CA key.
		require.Equal(t, []string{CAFile, NodeKeyFile, NodeFile}, dirFiles(t, out))
		require.NoFileExists(t, filepath.Join(out, CAKeyFile))
		require.Equal(t, caPEM, readFile(t, filepath.Join(out, CAFile)))
		fi, err := os.Stat(filepath.Join(out, NodeKeyFile))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		di, err := os.Stat(out)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), di.Mode().Perm())

		b, err := LoadTLSDir(out)
		require.NoError(t, err)
		require.Equal(t, want, b.Self)
		leaf := b.Cert.Leaf
		require.Equal(t, []string{want.String()}, urlStrings(leaf.URIs))
		require.Equal(t, []string{"n3.example"}, leaf.DNSNames)
		require.Len(t, leaf.IPAddresses, 1)
		require.ElementsMatch(t, tc.usages, leaf.ExtKeyUsage)
		require.WithinDuration(t, time.Now().Add(NodeValidity), leaf.NotAfter, time.Minute)
		require.NoError(t, b.verifyChain(b.Cert.Certificate, x509.ExtKeyUsageClientAuth))
		if tc.role == RoleWorker {
			// A worker never serves: its certificate is no server's.
			require.ErrorIs(t, b.verifyChain(b.Cert.Certificate, x509.ExtKeyUsageServerAuth), ErrUntrustedCert)
			require.NotContains(t, leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		} else {
			require.NoError(t, b.verifyChain(b.Cert.Certificate, x509.ExtKeyUsageServerAuth))
		}
	}
	// The CA directory is left as it was.
	require.Equal(t, []string{CAKeyFile, CAFile}, dirFiles(t, caDir))
	require.Equal(t, caPEM, readFile(t, filepath.Join(caDir, CAFile)))
}

func TestIssueCertRefusesBadIdentitiesAndWritesNothing(t *testing.T) {
	t.Parallel()
	caDir := t.TempDir()
	require.NoError(t, CreateCA(caDir, "c1"))
	for _, tc := range []struct {
		name string
		role Role
		id   string
	}{
		{"controller 0", RoleController, "0"},
		{"leading zero", RoleController, "01"},
		{"plus sign", RoleController, "+1"},
		{"negative", RoleController, "-1"},
		{"named controller", RoleController, "one"},
		{"empty controller id", RoleController, ""},
		{"controller id overflows", RoleController, "18446744073709551616"},
		{"empty worker id", RoleWorker, ""},
		{"worker id with slash", RoleWorker, "w/1"},
		{"worker id with space", RoleWorker, "w 1"},
		{"worker id starting with -", RoleWorker, "-w"},
		{"unknown role", "admin", "1"},
		{"empty role", "", "1"},
		{"upper-case role", "Controller", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "node")
			id, err := IssueCert(caDir, tc.role, tc.id, nil, out)
			require.Error(t, err)
			require.Zero(t, id)
			require.NoDirExists(t, out, "nothing is written for a refused identity")

			// Nor into an existing directory, nor with the dev shortcut.
			existing := t.TempDir()
			_, err = IssueCert(caDir, tc.role, tc.id, nil, existing)
			require.Error(t, err)
			require.Empty(t, dirFiles(t, existing))
			dev := t.TempDir()
			require.NoError(t, CreateCA(dev, "dev"))
			require.Error(t, CreateCerts(dev, tc.role, tc.id, nil))
			require.Equal(t, []string{CAKeyFile, CAFile}, dirFiles(t, dev))
		})
	}
	require.Equal(t, []string{CAKeyFile, CAFile}, dirFiles(t, caDir))
}

// writeCA writes a self-signed CA certificate for key carrying uris into
// dir, with the key, as CreateCA would but for any URIs.
func writeCA(t *testing.T, dir string, key *ecdsa.PrivateKey, uris ...string) {
	t.Helper()
	serial, err := randomSerial()
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "corral cluster CA", Organization: []string{"corral"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	for _, s := range uris {
		u, err := url.Parse(s)
		require.NoError(t, err)
		tmpl.URIs = append(tmpl.URIs, u)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, writeKey(filepath.Join(dir, CAKeyFile), key))
	require.NoError(t, writePEM(filepath.Join(dir, CAFile), "CERTIFICATE", der, 0o644))
}

func TestIssueCertRefusesACAWithoutCluster(t *testing.T) {
	t.Parallel()
	for name, uris := range map[string][]string{
		"no URI":              nil,
		"other scheme":        {"https://c1"},
		"a node's identity":   {"corral://c1/controller/1"},
		"upper-case cluster":  {"corral://C1"},
		"cluster with a port": {"corral://c1:7001"},
		"userinfo":            {"corral://u@c1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			require.NoError(t, err)
			caDir := t.TempDir()
			writeCA(t, caDir, key, uris...)
			out := filepath.Join(t.TempDir(), "node")
			id, err := IssueCert(caDir, RoleController, "1", nil, out)
			require.ErrorContains(t, err, "CA")
			require.Zero(t, id)
			require.NoDirExists(t, out)
			// The dev shortcut reuses the CA it finds, so it refuses too.
			require.Error(t, CreateCerts(caDir, RoleController, "1", nil))
			require.Equal(t, []string{CAKeyFile, CAFile}, dirFiles(t, caDir))
		})
	}
	// The same hand-made CA with a cluster URI is fine (the test's CA is
	// not what is refused above).
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caDir := t.TempDir()
	writeCA(t, caDir, key, "https://example.com", "corral://c1")
	id, err := IssueCert(caDir, RoleController, "1", nil, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, ControllerIdentity("c1", 1), id)
}

// A node certificate must name exactly one identity: LoadTLSDir refuses one
// with none or two, so a node never starts without knowing who it is.
func TestLoadTLSDirRefusesCertificatesWithoutOneIdentity(t *testing.T) {
	t.Parallel()
	caDir := t.TempDir()
	require.NoError(t, CreateCA(caDir, "c1"))
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for name, uris := range map[string][]string{
		"none":      nil,
		"two":       {"corral://c1/controller/1", "corral://c1/controller/2"},
		"invalid":   {"corral://c1/controller/0"},
		"a cluster": {"corral://c1"},
	} {
		dir := writeBundleDir(t, caDir, signLeaf(t, caDir, uris, both, Identity{}))
		_, err := LoadTLSDir(dir)
		require.ErrorContains(t, err, NodeFile, name)
		require.ErrorContains(t, err, "corral certs issue", name)
	}
	// The same hand-made certificate with one identity loads.
	dir := writeBundleDir(t, caDir, signLeaf(t, caDir, []string{"https://x", "corral://c1/controller/2"}, both, Identity{}))
	b, err := LoadTLSDir(dir)
	require.NoError(t, err)
	require.Equal(t, ControllerIdentity("c1", 2), b.Self)
}
