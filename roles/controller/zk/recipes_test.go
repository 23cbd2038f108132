package zk

import (
	"strconv"
	"sync"
	"testing"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

// TestRecipes runs go-zookeeper's own lock recipe and a versioned counter
// across several sessions and two servers.
func TestRecipes(t *testing.T) {
	b := newFakeBackend()
	s1 := startServer(t, b, Config{})
	s2 := startServer(t, b, Config{})
	acl := gozk.WorldACL(gozk.PermAll)
	setup, _ := connect(t, s1.Addr().String())
	_, err := setup.Create("/counter", []byte("0"), 0, acl)
	require.NoError(t, err)

	const workers, rounds = 4, 10
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		holders int
		maxHeld int
	)
	for w := 0; w < workers; w++ {
		addr := s1.Addr().String()
		if w%2 == 1 {
			addr = s2.Addr().String()
		}
		c, _ := connect(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			lock := gozk.NewLock(c, "/lock", acl)
			for i := 0; i < rounds; i++ {
				if err := lock.Lock(); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				holders++
				maxHeld = max(maxHeld, holders)
				mu.Unlock()
				// Increment with compare-and-set; the lock makes the first
				// try succeed, the version check proves it.
				data, st, err := c.Get("/counter")
				if err == nil {
					n, _ := strconv.Atoi(string(data))
					_, err = c.Set("/counter", []byte(strconv.Itoa(n+1)), st.Version)
				}
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				holders--
				mu.Unlock()
				if err := lock.Unlock(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, maxHeld)
	data, st, err := setup.Get("/counter")
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(workers*rounds), string(data))
	require.Equal(t, int32(workers*rounds), st.Version)

	p, err := setup.CreateProtectedEphemeralSequential("/lock/p-", nil, acl)
	require.NoError(t, err)
	require.Contains(t, p, "_c_")
	kids, _, err := setup.Children("/lock")
	require.NoError(t, err)
	require.Len(t, kids, 1)
}
