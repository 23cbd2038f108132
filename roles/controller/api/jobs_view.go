package api

import (
	"github.com/corral-dev/corral/metadata"
	"github.com/corral-dev/corral/roles/controller/api/view"
)

func (s *Server) jobDetail(j *metadata.Job) view.Job {
	v := view.SummarizeJob(j, s.store.State().Allocations(j.Name, ""))
	spec := j.Spec
	v.Spec = &spec
	for _, e := range j.Events {
		v.Events = append(v.Events, view.JobEvent{At: view.FormatMS(e.AtMS), Message: e.Message})
	}
	return v
}
