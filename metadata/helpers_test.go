package metadata

import "testing"

func putCmd(key, val string) *Command { return &Command{Op: OpPut, Key: key, Value: []byte(val)} }
func delCmd(key string) *Command      { return &Command{Op: OpDelete, Key: key} }
func casCmd(key, val string, prev int64) *Command {
	return &Command{Op: OpPut, Key: key, Value: []byte(val), PrevRevision: prev, HasPrev: true}
}
func casDelCmd(key string, prev int64) *Command {
	return &Command{Op: OpDelete, Key: key, PrevRevision: prev, HasPrev: true}
}

// applier feeds commands to a State with consecutive log indexes.
type applier struct {
	t     testing.TB
	s     *State
	index uint64
}

func newApplier(t testing.TB) *applier { return &applier{t: t, s: New()} }

func (a *applier) apply(c *Command) Result {
	a.index++
	c.ID = a.index * 10
	id, res := a.s.Apply(a.index, c.Marshal())
	if id != c.ID {
		a.t.Fatalf("Apply returned id %d, want %d", id, c.ID)
	}
	return res
}
