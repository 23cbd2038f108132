package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// QuorumHealth is a controller's view of the voters it can reach.
type QuorumHealth struct {
	Voters           int  `json:"voters"`
	Learners         int  `json:"learners"`
	Reachable        int  `json:"reachable"`
	Needed           int  `json:"needed"`
	Healthy          bool `json:"healthy"`
	FailureTolerance int  `json:"failure_tolerance"`
}

// ControllerInfo is one controller in the leader's replication view.
type ControllerInfo struct {
	ID            uint64 `json:"id"`
	Address       string `json:"address"`
	HTTPAddress   string `json:"http_address"`
	Role          string `json:"role"` // leader, follower or learner
	Voter         bool   `json:"voter"`
	MatchIndex    uint64 `json:"match_index"`
	Lag           uint64 `json:"lag"` // entries behind the leader's last index
	Reachable     bool   `json:"reachable"`
	LastContactMS *int64 `json:"last_contact_ms"`
}

// ControllerList is the answer of GET /v1/controllers (served by the leader).
type ControllerList struct {
	LeaderID    uint64           `json:"leader_id"`
	Term        uint64           `json:"term"`
	Controllers []ControllerInfo `json:"controllers"`
	Quorum      QuorumHealth     `json:"quorum"`
}

// Controllers lists the quorum's members with their replication progress.
func (c *Client) Controllers(ctx context.Context) (*ControllerList, error) {
	var out ControllerList
	if err := c.do(ctx, call{method: http.MethodGet, path: "/v1/controllers"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AddController adds controller id (reachable by other controllers at
// address) as a learner. Start it with --join afterwards; the leader
// promotes it to voter once it has caught up.
func (c *Client) AddController(ctx context.Context, id uint64, address string) error {
	body, _ := json.Marshal(map[string]any{"id": id, "address": address})
	return c.do(ctx, call{method: http.MethodPost, path: "/v1/controllers", body: body}, nil)
}

// RemoveController removes controller id. Without force, a removal that
// would leave the remaining voters without a reachable majority is refused.
func (c *Client) RemoveController(ctx context.Context, id uint64, force bool) error {
	q := url.Values{}
	if force {
		q.Set("force", "true")
	}
	return c.do(ctx, call{method: http.MethodDelete, path: "/v1/controllers/" + strconv.FormatUint(id, 10), query: q}, nil)
}

// TransferLeader moves leadership to controller id and returns once it leads.
func (c *Client) TransferLeader(ctx context.Context, id uint64) error {
	return c.do(ctx, call{method: http.MethodPost, path: fmt.Sprintf("/v1/controllers/%d/transfer-leader", id)}, nil)
}

// SaveSnapshot streams a consistent backup of the state machine (with its
// index, term and checksum) into w.
func (c *Client) SaveSnapshot(ctx context.Context, w io.Writer) error {
	return c.do(ctx, call{method: http.MethodGet, path: "/v1/snapshot", raw: func(r io.Reader) error {
		_, err := io.Copy(w, r)
		return err
	}}, nil)
}
