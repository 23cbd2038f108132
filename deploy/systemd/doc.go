// Package systemd holds corral's systemd units (*.service), their
// environment file examples and the test that checks them against the
// corral CLI and systemd-analyze. It has no code: see docs/INSTALL.md.
package systemd
