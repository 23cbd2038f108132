package cli

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/corral-dev/corral/transport"
)

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print corral's version, the commit it was built from and the Go version (also: corral --version)",
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0); err != nil {
				return err
			}
			printVersion(c.App.Writer)
			return nil
		},
	}
}

// versionFlag is the global --version; App's Action prints the version when it is set. urfave/cli's own
// version flag would need App.Version, which it prints by itself through a package-level printer.
func versionFlag() cli.Flag {
	return &cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version and exit (as 'corral version')"}
}

// printVersion prints the build of this binary, the same one GET /v1/cluster shows under "build".
func printVersion(w io.Writer) {
	b := transport.Build()
	commit := b.Commit
	switch {
	case commit == "":
		commit = "unknown (not built from a git checkout)"
	case b.Modified:
		commit += " (modified: built with uncommitted changes)"
	}
	fmt.Fprintf(w, "corral %s\ncommit: %s\ngo:     %s\n", b.Version, commit, b.GoVersion)
}

func completionCommand() *cli.Command {
	script := func(shell string, gen func(c *cli.Context) (string, error)) *cli.Command {
		return &cli.Command{
			Name:  shell,
			Usage: "print the " + shell + " completion script",
			Action: func(c *cli.Context) error {
				if err := wantArgs(c, 0); err != nil {
					return err
				}
				s, err := gen(c)
				if err != nil {
					return fmt.Errorf("generate the %s completion script: %w", shell, err)
				}
				_, err = io.WriteString(c.App.Writer, s)
				return err
			},
		}
	}
	static := func(s string) func(*cli.Context) (string, error) {
		return func(*cli.Context) (string, error) { return s, nil }
	}
	return &cli.Command{
		Name:  "completion",
		Usage: "print a shell completion script: bash, zsh or fish",
		Description: "Load it in the current shell, or install it for every new one:\n" +
			"  bash:  source <(corral completion bash)   or   corral completion bash > /etc/bash_completion.d/corral\n" +
			"  zsh:   source <(corral completion zsh)    or   corral completion zsh > \"${fpath[1]}/_corral\"\n" +
			"  fish:  corral completion fish > ~/.config/fish/completions/corral.fish",
		Subcommands: []*cli.Command{
			script("bash", static(bashCompletion)),
			script("zsh", static(zshCompletion)),
			// fish completes from a static list of every command and flag that urfave/cli generates.
			script("fish", func(c *cli.Context) (string, error) { return c.App.ToFishCompletion() }),
		},
		Action: groupCommand("completion", "bash", "zsh", "fish"),
	}
}

// bashCompletion asks corral itself for the candidates: with App.EnableBashCompletion, urfave/cli answers
// --generate-bash-completion with the subcommands (or, after a "-", the flags) of the command line before it.
// Adapted from urfave/cli's autocomplete/bash_autocomplete.
const bashCompletion = `# bash completion for corral; load with: source <(corral completion bash)
_corral_complete() {
  local cur opts
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == "-"* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  return 0
}
complete -o bashdefault -o default -F _corral_complete corral
`

// zshCompletion uses the same protocol as bashCompletion; adapted from urfave/cli's autocomplete/zsh_autocomplete.
const zshCompletion = `#compdef corral
# zsh completion for corral; load with: source <(corral completion zsh)
_corral() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} "$cur" --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _corral corral
`
