package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-dev/corral/roles/controller/api"
)

// registerQuotaMetrics exports the replicated state's size and the storage
// quota alarm (docs/METRICS.md). quota <= 0 means no quota: the alarm
// stays 0.
func (c *Controller) registerQuotaMetrics(quota int64) {
	c.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_state_bytes",
			Help: "Estimated size of the replicated state: keys and values, plus jobs and other cluster objects."},
			func() float64 { return float64(c.r.State().Bytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_quota_bytes",
			Help: "This controller's storage quota (--quota-bytes); 0: none."},
			func() float64 { return float64(max(quota, 0)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "corral_quota_exceeded",
			Help: "1 while the replicated state is past this controller's --quota-bytes: writes that add data get no_space."},
			func() float64 {
				if api.QuotaExceeded(c.r.State(), quota) {
					return 1
				}
				return 0
			}))
}
