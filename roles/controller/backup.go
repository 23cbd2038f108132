package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-dev/corral/roles/backup"
)

// snapshotForBackup takes a consistent snapshot of the state machine: a
// linearizable read first, so the backup holds every write acknowledged
// before the request.
func (c *Controller) snapshotForBackup(ctx context.Context) (backup.Header, []byte, error) {
	if err := c.r.LinearizableRead(ctx); err != nil {
		return backup.Header{}, nil, err
	}
	for attempt := 0; attempt < 3; attempt++ {
		st := c.r.State()
		data, err := st.Snapshot()
		if err != nil {
			return backup.Header{}, nil, fmt.Errorf("snapshot state: %w", err)
		}
		// The index inside data is the one to describe; read it back from
		// the bytes rather than racing the apply loop.
		restored, err := backup.SnapshotIndex(data)
		if err != nil {
			return backup.Header{}, nil, err
		}
		term, err := c.r.LogTerm(restored)
		if err != nil {
			continue // compacted meanwhile: take a fresher one
		}
		return backup.Header{Index: restored, Term: term, ClusterID: c.ClusterID(),
			CreatedAt: time.Now().UTC(), Members: st.Members()}, data, nil
	}
	return backup.Header{}, nil, fmt.Errorf("snapshot state: log compacted under the snapshot three times; retry")
}
