package cli

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/client"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the cluster id, the leader and each controller's replication progress",
		Description: "Match indexes are only known to the leader; when a follower answers, the table shows\n" +
			"what it can. Example: corral status --endpoints http://127.0.0.1:8080,http://127.0.0.1:8081",
		Flags: append(clientFlags(), outputFlag("table")),
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			asJSON, err := jsonOutput(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			st, err := cl.Cluster(c.Context)
			if err != nil {
				return explain("cluster status", err)
			}
			if asJSON {
				return printJSON(c.App.Writer, statusJSON(st))
			}
			return printStatus(c.App.Writer, st)
		},
	}
}

// printStatus writes the cluster summary and one table row per controller.
//
// Lag is how far a controller's log is behind: the leader's own match index (its last log index) when the answer
// came from the leader, else the commit index, minus the controller's match index. Followers do not know their
// peers' match indexes, so for them the unknown values print as "-".
func printStatus(w io.Writer, st *client.ClusterStatus) error {
	leader := "none (no leader elected)"
	var leaderMatch uint64
	for _, ct := range st.Controllers {
		if ct.ID == st.LeaderID {
			leaderMatch = ct.MatchIndex
		}
	}
	if st.LeaderID != 0 {
		leader = strconv.FormatUint(st.LeaderID, 10)
	}
	// A leader's own progress always has a non-zero match once it has appended its first entry; a follower
	// answering reports 0 for its peers.
	fromLeader := st.LeaderID != 0 && leaderMatch > 0
	ref := st.CommitIndex
	if fromLeader {
		ref = leaderMatch
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "cluster id:\t%s\n", orDash(st.ClusterID))
	fmt.Fprintf(tw, "leader:\t%s\n", leader)
	fmt.Fprintf(tw, "term:\t%d\n", st.Term)
	fmt.Fprintf(tw, "commit index:\t%d\n", st.CommitIndex)
	fmt.Fprintf(tw, "applied index:\t%d\n", st.AppliedIndex)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)

	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tROLE\tMATCH INDEX\tLAG\tREACHABLE")
	for _, ct := range st.Controllers {
		match, lag := "-", "-"
		if fromLeader || ct.MatchIndex > 0 {
			match = strconv.FormatUint(ct.MatchIndex, 10)
			var l uint64
			if ref > ct.MatchIndex {
				l = ref - ct.MatchIndex
			}
			lag = strconv.FormatUint(l, 10)
		}
		reachable := "no"
		if ct.Reachable {
			reachable = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", ct.ID, orDash(ct.Address), orDash(ct.Role), match, lag, reachable)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.LeaderID != 0 && !fromLeader {
		_, err := fmt.Fprintln(w, "\n(answered by a follower: match indexes are only known to the leader)")
		return err
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// statusJSON is -o json of `corral status`: the API's field names (client.ClusterStatus has Go names only).
func statusJSON(st *client.ClusterStatus) map[string]any {
	ctrls := make([]map[string]any, 0, len(st.Controllers))
	for _, ct := range st.Controllers {
		ctrls = append(ctrls, map[string]any{"id": ct.ID, "address": ct.Address, "role": ct.Role,
			"match_index": ct.MatchIndex, "reachable": ct.Reachable})
	}
	return map[string]any{"cluster_id": st.ClusterID, "leader_id": st.LeaderID, "term": st.Term,
		"commit_index": st.CommitIndex, "applied_index": st.AppliedIndex, "node_id": st.NodeID,
		"controllers": ctrls, "workers": st.Workers}
}
