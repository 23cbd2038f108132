package transport

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCreateCertsLoadRoundTrip(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "tls") // created by CreateCerts
	require.NoError(t, CreateCerts(dir, RoleController, "7", []string{"10.0.0.7", "node1.example", "::1"}))
	for _, f := range []string{CAKeyFile, NodeKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	b, err := LoadTLSDir(dir)
	require.NoError(t, err)
	leaf := b.Cert.Leaf
	require.IsType(t, &ecdsa.PublicKey{}, leaf.PublicKey)
	require.Equal(t, elliptic.P256(), leaf.PublicKey.(*ecdsa.PublicKey).Curve)
	require.Equal(t, []string{"node1.example"}, leaf.DNSNames)
	require.True(t, leaf.IPAddresses[0].Equal(net.ParseIP("10.0.0.7")))
	require.True(t, leaf.IPAddresses[1].Equal(net.ParseIP("::1")))
	require.ElementsMatch(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, leaf.ExtKeyUsage)
	// The certificate names exactly one identity, of the CA's cluster.
	require.Len(t, leaf.URIs, 1)
	require.Equal(t, RoleController, b.Self.Role)
	require.Equal(t, "7", b.Self.ID)
	require.Equal(t, uint64(7), b.Self.NodeID())
	require.NoError(t, ValidateClusterName(b.Self.Cluster))
	require.Equal(t, b.Self.String(), leaf.URIs[0].String())
	require.WithinDuration(t, time.Now().Add(NodeValidity), leaf.NotAfter, time.Minute)
	chains, err := leaf.Verify(x509.VerifyOptions{Roots: b.CA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	ca := chains[0][1]
	require.True(t, ca.IsCA)
	require.Equal(t, []string{"corral://" + b.Self.Cluster}, urlStrings(ca.URIs), "the CA names the cluster")
	require.WithinDuration(t, time.Now().Add(CAValidity), ca.NotAfter, time.Minute)

	sc := b.serverConfig("x/1")
	require.Equal(t, uint16(tls.VersionTLS13), sc.MinVersion)
	require.Equal(t, tls.RequireAndVerifyClientCert, sc.ClientAuth)
	require.Equal(t, []string{"x/1"}, sc.NextProtos)
	require.Equal(t, uint16(tls.VersionTLS13), b.ClientConfig().MinVersion)
}

func TestCreateCertsReusesCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, CreateCerts(dir, RoleController, "1", nil))
	read := func(f string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		return b
	}
	ca1, caKey1, node1 := read(CAFile), read(CAKeyFile), read(NodeFile)
	b1, err := LoadTLSDir(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"localhost"}, b1.Cert.Leaf.DNSNames) // default hosts

	require.NoError(t, CreateCerts(dir, RoleController, "2", []string{"127.0.0.1"}))
	require.Equal(t, ca1, read(CAFile))
	require.Equal(t, caKey1, read(CAKeyFile))
	require.NotEqual(t, node1, read(NodeFile))
	b2, err := LoadTLSDir(dir)
	require.NoError(t, err)
	require.Equal(t, b1.Self.Cluster, b2.Self.Cluster, "a reused CA keeps its cluster")
	require.Equal(t, ControllerIdentity(b1.Self.Cluster, 2), b2.Self)
	// Old and new node certs are from the same CA, so they trust each other.
	require.NoError(t, b1.verifyChain(b2.Cert.Certificate, x509.ExtKeyUsageServerAuth))
	require.NoError(t, b2.verifyChain(b1.Cert.Certificate, x509.ExtKeyUsageClientAuth))
}

func TestLoadTLSDirErrors(t *testing.T) {
	t.Parallel()
	_, err := LoadTLSDir(filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, CAFile)
	require.ErrorIs(t, err, os.ErrNotExist)

	for _, f := range []string{NodeFile, NodeKeyFile} {
		dir := t.TempDir()
		require.NoError(t, CreateCerts(dir, RoleController, "1", nil))
		require.NoError(t, os.Remove(filepath.Join(dir, f)))
		_, err := LoadTLSDir(dir)
		require.ErrorContains(t, err, f)
		require.ErrorIs(t, err, os.ErrNotExist)
	}

	dir := t.TempDir()
	require.NoError(t, CreateCerts(dir, RoleController, "1", nil))
	require.NoError(t, os.WriteFile(filepath.Join(dir, CAFile), []byte("garbage"), 0o644))
	_, err = LoadTLSDir(dir)
	require.ErrorContains(t, err, CAFile)

	// node.pem from one CA next to another CA's ca.pem.
	other := t.TempDir()
	require.NoError(t, CreateCerts(other, RoleController, "1", nil))
	dir = t.TempDir()
	require.NoError(t, CreateCerts(dir, RoleController, "1", nil))
	for _, f := range []string{NodeFile, NodeKeyFile} {
		b, err := os.ReadFile(filepath.Join(other, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o600))
	}
	_, err = LoadTLSDir(dir)
	require.ErrorIs(t, err, ErrUntrustedCert)
	require.ErrorContains(t, err, NodeFile)
}

func TestCreateCertsErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, CreateCerts(dir, RoleController, "1", nil))
	require.NoError(t, os.Remove(filepath.Join(dir, CAKeyFile)))
	err := CreateCerts(dir, RoleController, "1", nil)
	require.ErrorContains(t, err, CAKeyFile)

	// A CA key that does not belong to ca.pem is refused.
	dir2 := t.TempDir()
	require.NoError(t, CreateCerts(dir2, RoleController, "1", nil))
	k, err := os.ReadFile(filepath.Join(dir2, CAKeyFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, CAKeyFile), k, 0o600))
	require.ErrorContains(t, CreateCerts(dir, RoleController, "1", nil), "does not match")

	require.NoError(t, os.WriteFile(filepath.Join(dir, CAKeyFile), []byte("junk"), 0o600))
	require.ErrorContains(t, CreateCerts(dir, RoleController, "1", nil), CAKeyFile)
	require.True(t, bytes.HasPrefix(k, []byte("-----BEGIN PRIVATE KEY-----")), "keys are PKCS#8")
}
