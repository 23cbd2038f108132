package api

import (
	"net/http"
	"strconv"

	"github.com/corral-dev/corral/roles/backup"
)

// handleSnapshot is GET /v1/snapshot: the backup file, written raw.
func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) (any, error) {
	h, data, err := s.backups.SnapshotForBackup(r.Context())
	if err != nil {
		return nil, err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", "attachment; filename=corral-"+strconv.FormatUint(h.Index, 10)+".snap")
	w.Header().Set("X-Corral-Snapshot-Index", strconv.FormatUint(h.Index, 10))
	w.Header().Set("X-Corral-Snapshot-Term", strconv.FormatUint(h.Term, 10))
	if err := backup.Encode(w, h, data); err != nil {
		s.log.Warn("snapshot download interrupted", "err", err)
	}
	return nil, nil
}
