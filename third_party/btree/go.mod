module github.com/tidwall/btree

go 1.20
