package client_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/corral-dev/corral/client"
)

// A DolphinScheduler-style master: register in the registry, take part in a
// failover election, schedule only while leading, and stop the moment the
// session is in doubt. (Also shown in README.md.)
func Example_masterRegistry() {
	ctx := context.Background()
	id, addr := "master-1", "10.0.0.11:5678"
	cl, err := client.New(client.Config{Endpoints: []string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"}})
	if err != nil {
		log.Fatal(err)
	}
	s, err := cl.NewSession(ctx, 10*time.Second) // a lease, kept alive in the background
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close(context.Background())
	// Registry: listed while this process lives (an ephemeral key on the lease).
	if _, err := cl.Register(ctx, "master", id, addr, map[string]string{"zone": "a"}, s.LeaseID()); err != nil {
		log.Fatal(err)
	}
	// Failover: one active master, the others queue first come, first served.
	e := s.NewElection("active-master")
	epoch, err := e.Campaign(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("%s is the active master, epoch %d (pass it to everything it writes)", id, epoch)
	workers, _, _ := cl.Instances(ctx, "corral-worker") // which workers are up, and how busy
	for _, w := range workers {
		log.Printf("worker %s at %s", w.Instance, w.Address)
	}
	masters := cl.Watch(ctx, "_corral/services/master/", 0) // masters joining and leaving
	for {
		select {
		case ev := <-masters.Events():
			log.Printf("master registry: %s %s", ev.Type, ev.Key)
		case <-e.Done(): // session in doubt: another master may take over any moment
			log.Fatal(errors.New("lost the session: stop scheduling now"))
		}
	}
}
