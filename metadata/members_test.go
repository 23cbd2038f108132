package metadata

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestApplyMemberChange_UpdateRecordsNothingButAdvancesTheIndex(t *testing.T) {
	t.Parallel()
	s := New()
	require.NoError(t, s.ApplyMemberChange(1, MemberAdd, Member{ID: 1, Address: "a:1"}))
	require.NoError(t, s.ApplyMemberChange(2, MemberUpdate, Member{ID: 5}))
	require.Equal(t, uint64(2), s.AppliedIndex())
	require.Len(t, s.Members(), 1, "an update adds no member")
	require.ErrorIs(t, s.ApplyMemberChange(2, MemberUpdate, Member{ID: 5}), ErrAlreadyApplied)
}
