package jute

// Filled-in records of every kind, for round-trip tests and fuzz seeds.

var sampleStat = Stat{
	Czxid: 0x100000002, Mzxid: 0x100000007, Ctime: 1700000000123, Mtime: 1700000000456,
	Version: 3, Cversion: 2, Aversion: 1, EphemeralOwner: 0x1234_5678_9abc,
	DataLength: 5, NumChildren: 2, Pzxid: 0x100000009,
}

var sampleACL = []ACL{
	{Perms: PermAll, ID: ID{Scheme: "world", ID: "anyone"}},
	{Perms: PermRead | PermWrite, ID: ID{Scheme: "digest", ID: "bob:abc="}},
}

func sampleRequests() map[Op]Record {
	return map[Op]Record{
		OpCreate:               &CreateRequest{Path: "/a", Data: []byte("hello"), ACL: sampleACL, Flags: FlagEphemeralSequential},
		OpCreate2:              &CreateRequest{Path: "/b", Data: []byte{}, ACL: sampleACL[:1], Flags: FlagPersistent},
		OpCreateContainer:      &CreateRequest{Path: "/c", Data: nil, ACL: []ACL{}, Flags: FlagContainer},
		OpCreateTTL:            &CreateTTLRequest{Path: "/t", Data: []byte("x"), ACL: sampleACL, Flags: FlagPersistentWithTTL, TTL: 60000},
		OpDelete:               &PathVersionRequest{Path: "/a", Version: -1},
		OpCheck:                &PathVersionRequest{Path: "/a", Version: 7},
		OpExists:               &PathWatchRequest{Path: "/e", Watch: true},
		OpGetData:              &PathWatchRequest{Path: "/g", Watch: false},
		OpGetChildren:          &PathWatchRequest{Path: "/", Watch: true},
		OpGetChildren2:         &PathWatchRequest{Path: "/x/y", Watch: true},
		OpSetData:              &SetDataRequest{Path: "/s", Data: []byte("v2"), Version: 4},
		OpGetACL:               &PathRequest{Path: "/acl"},
		OpSetACL:               &SetACLRequest{Path: "/acl", ACL: sampleACL, Version: 0},
		OpSync:                 &PathRequest{Path: "/"},
		OpGetAllChildrenNumber: &PathRequest{Path: "/n"},
		OpGetEphemerals:        &PathRequest{Path: "/eph"},
		OpMulti: &MultiRequest{Ops: []MultiOp{
			{Type: OpCreate, Req: &CreateRequest{Path: "/m", Data: []byte("1"), ACL: sampleACL[:1]}},
			{Type: OpCreateTTL, Req: &CreateTTLRequest{Path: "/m2", ACL: sampleACL[:1], Flags: FlagPersistentWithTTL, TTL: 5}},
			{Type: OpSetData, Req: &SetDataRequest{Path: "/m", Data: []byte("2"), Version: 0}},
			{Type: OpCheck, Req: &PathVersionRequest{Path: "/m", Version: 1}},
			{Type: OpDelete, Req: &PathVersionRequest{Path: "/m", Version: -1}},
		}},
		OpMultiRead: &MultiRequest{Ops: []MultiOp{
			{Type: OpGetData, Req: &PathWatchRequest{Path: "/r"}},
			{Type: OpGetChildren, Req: &PathWatchRequest{Path: "/"}},
		}},
		OpAuth: &AuthPacket{Type: 0, Scheme: "digest", Auth: []byte("bob:secret")},
		OpSetWatches: &SetWatchesRequest{RelativeZxid: 42, DataWatches: []string{"/d"},
			ExistWatches: []string{}, ChildWatches: []string{"/c1", "/c2"}},
		OpSetWatches2: &SetWatchesRequest{Two: true, RelativeZxid: 43, DataWatches: []string{"/d"},
			ExistWatches: []string{"/e"}, ChildWatches: []string{}, PersistentWatches: []string{"/p"},
			PersistentRecursiveWatches: []string{"/pr"}},
		OpAddWatch:      &AddWatchRequest{Path: "/w", Mode: AddWatchPersistentRecursive},
		OpCheckWatches:  &WatchesRequest{Path: "/w", Type: WatcherData},
		OpRemoveWatches: &WatchesRequest{Path: "/w", Type: WatcherAny},
		OpPing:          &Empty{},
		OpCloseSession:  &Empty{},
		OpWhoAmI:        &Empty{},
	}
}

func sampleResponses() map[Op]Record {
	return map[Op]Record{
		OpCreate:               &PathResponse{Path: "/a0000000001"},
		OpSync:                 &PathResponse{Path: "/"},
		OpCreate2:              &Create2Response{Path: "/b", Stat: sampleStat},
		OpCreateContainer:      &Create2Response{Path: "/c", Stat: sampleStat},
		OpCreateTTL:            &Create2Response{Path: "/t", Stat: sampleStat},
		OpExists:               &StatResponse{Stat: sampleStat},
		OpSetData:              &StatResponse{Stat: sampleStat},
		OpSetACL:               &StatResponse{Stat: sampleStat},
		OpGetData:              &GetDataResponse{Data: []byte("hello"), Stat: sampleStat},
		OpGetChildren:          &StringsResponse{Strings: []string{"a", "b"}},
		OpGetEphemerals:        &StringsResponse{Strings: []string{"/eph/1"}},
		OpGetChildren2:         &GetChildren2Response{Children: []string{"x"}, Stat: sampleStat},
		OpGetAllChildrenNumber: &Int32Response{Value: 12},
		OpGetACL:               &GetACLResponse{ACL: sampleACL, Stat: sampleStat},
		OpWhoAmI:               &WhoAmIResponse{ClientInfo: []ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}}},
		OpMulti: &MultiResponse{Results: []MultiResult{
			{Type: OpCreate, Resp: &PathResponse{Path: "/m"}},
			{Type: OpCreate2, Resp: &Create2Response{Path: "/m2", Stat: sampleStat}},
			{Type: OpSetData, Resp: &StatResponse{Stat: sampleStat}},
			{Type: OpCheck},
			{Type: OpDelete},
			{Type: OpError, Err: CodeBadVersion},
		}},
		OpMultiRead: &MultiResponse{Results: []MultiResult{
			{Type: OpGetData, Resp: &GetDataResponse{Data: []byte("r"), Stat: sampleStat}},
			{Type: OpGetChildren, Resp: &StringsResponse{Strings: []string{}}},
			{Type: OpError, Err: CodeNoNode},
		}},
		OpCheck:    &StatResponse{Stat: sampleStat},
		OpAddWatch: &Int32Response{Value: 0},
		OpDelete:   &Empty{},
		OpPing:     &Empty{},
	}
}
