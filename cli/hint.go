package cli

import (
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// hintFlags are the flags a follow-up command needs to reach the same cluster. --token is left out on purpose:
// a hint must not print a secret into the terminal and its scrollback; users pass it through CORRAL_TOKEN.
var hintFlags = []string{"endpoints", "cacert"}

// hint renders the command line of a follow-up command (sub, e.g. "job status", and its arguments) so that it
// works as printed: it repeats the connection flags the user gave on this command line, and --config when a file
// was given. Flags set through CORRAL_* variables are not repeated: they are still in the environment.
func hint(c *cli.Context, sub string, args ...string) string {
	parts := []string{"corral"}
	if f := c.String("config"); f != "" && !fromEnv("config") {
		parts = append(parts, "--config", shellQuote(f))
	}
	parts = append(parts, sub)
	for _, name := range hintFlags {
		if onCommandLine(c, name) {
			parts = append(parts, "--"+name, shellQuote(c.String(name)))
		}
	}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// onCommandLine reports whether flag name of c's command was given on the command line (not by a CORRAL_*
// variable, a config file or its default).
func onCommandLine(c *cli.Context, name string) bool {
	if !c.IsSet(name) || fromEnv(name) {
		return false
	}
	_, fromConfig := configSet(c.App)[name]
	return !fromConfig
}

func fromEnv(name string) bool {
	_, ok := os.LookupEnv(envVars(name)[0])
	return ok
}

// shellQuote quotes s for a POSIX shell when it needs it, so a printed hint can be pasted.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:,=@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
