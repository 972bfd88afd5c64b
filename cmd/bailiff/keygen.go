package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/chain"
)

type keygenParams struct {
	name     string
	approver string
	out      string
	output   output
}

func newKeygen(stderr io.Writer) *cobra.Command {
	var p keygenParams
	c := &cobra.Command{
		Use:   "keygen --name NAME -o PREFIX | --approver NAME [-o PREFIX]",
		Short: "Make a key pair for signing checkpoints or approvals",
		Long: `keygen makes an Ed25519 key pair in the signed-note text form and writes
PREFIX.key (private, mode 0600) and PREFIX.pub (public, mode 0644).

With --name NAME the key signs audit log checkpoints: NAME identifies the
log, every checkpoint the key signs names it; keep the private key with
the gateway and give the public one to whoever verifies.

With --approver NAME the key signs answers to asks ('bailiff approve'):
NAME is the approver, as grants name them. Without -o the pair goes to
the user's config directory (bailiff/approvers/NAME.key; override with
$BAILIFF_APPROVER_DIR), where the agent's tools should not reach. Give
the public key to the gateway (--approver-key, $BAILIFF_APPROVER_KEYS or
approver_keys in gateway.yaml); only answers signed by a key it was
given count.`,
		Example: `  bailiff keygen --name audit.example.com/mail -o audit
  bailiff checkpoint audit.jsonl --key audit.key -o audit.ckpt
  bailiff keygen --approver lee`,
		Args: noArgs(),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case p.name != "" && p.approver != "":
				return usageErr(errors.New("keygen makes a checkpoint key (--name) or an approver key (--approver), not both"), "")
			case p.approver != "":
				return checkKeyName("--approver", p.approver)
			case p.name == "" || p.out == "":
				return usageErr(errors.New("keygen needs --name and -o, or --approver"), "bailiff keygen --name audit.example.com/mail -o audit")
			}
			return checkKeyName("--name", p.name)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeygen(stderr, p)
		},
	}
	c.Flags().StringVar(&p.name, "name", "", "name of the log the key signs checkpoints for")
	c.Flags().StringVar(&p.approver, "approver", "", "make an approver key for this approver")
	c.Flags().StringVarP(&p.out, "output", "o", "", "prefix of the key files")
	p.output.register(c)
	return c
}

func runKeygen(stderr io.Writer, p keygenParams) error {
	name, out, err := keygenTarget(p)
	if err != nil {
		return err
	}
	skey, vkey, err := chain.GenerateKey(rand.Reader, name)
	if err != nil {
		return usageErr(err, "")
	}
	if out == "-" {
		return usageErr(errors.New("keygen writes two files, PREFIX.key and PREFIX.pub: -o takes a prefix, not -"), "")
	}
	if err := writeKeyPair(p.output, out, skey, vkey); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bailiff: wrote %s.key (private) and %s.pub (public)\n", out, out)
	if p.approver != "" {
		fmt.Fprintf(stderr, "bailiff: hint: start the gateway with --approver-key %s.pub\n", out)
	}
	return nil
}

// keygenTarget is the key's name and the prefix of its files: an
// approver key without -o goes to the approver directory, made here.
func keygenTarget(p keygenParams) (name, out string, err error) {
	name, out = p.name, p.out
	if p.approver == audit.ElicitationApprover {
		// The gateway refuses every key with this name: a key
		// made with it could never approve anything.
		return "", "", usageErr(fmt.Errorf("approver name %q is reserved for answers given through the client", p.approver), "choose another name")
	}
	if p.approver != "" {
		name = p.approver
		if out == "" {
			dir, err := approverDir()
			if err != nil {
				return "", "", err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return "", "", usageErr(fmt.Errorf("cannot make %s: %v", dir, unwrapPath(err)), "")
			}
			out = filepath.Join(dir, name)
		}
	}
	return name, out, nil
}

func writeKeyPair(o output, out, skey, vkey string) error {
	// Both are checked first, so a refusal leaves neither half
	// of a new pair beside an old one.
	if err := o.check(nil, out+".key", out+".pub"); err != nil {
		return err
	}
	// The private key is written 0600 from the start: a
	// temporary file is, and so the renamed file is.
	if err := o.write(out+".key", []byte(skey+"\n")); err != nil {
		return err
	}
	// The public half is for others to read: 0644.
	return o.writeFrom(out+".pub", func(w io.Writer) error {
		if f, ok := w.(*os.File); ok {
			if err := f.Chmod(0o644); err != nil {
				return usageErr(fmt.Errorf("cannot write %s.pub: %v", out, unwrapPath(err)), "")
			}
		}
		if _, err := w.Write([]byte(vkey + "\n")); err != nil {
			return usageErr(fmt.Errorf("cannot write %s.pub: %v", out, err), "")
		}
		return nil
	})
}

// checkKeyName refuses, before any file is made, a name the key's signer
// would later refuse to load.
func checkKeyName(flag, name string) error {
	if err := chain.ValidKeyName(name); err != nil {
		return usageErr(fmt.Errorf("%s %q: %v", flag, name, err), "")
	}
	// The two kinds of key are told apart by their names: a checkpoint
	// key is named for its log's origin (host/path), an approver key for
	// a person. A key of one kind given for the other is then refused by
	// name, not used to sign what it was never meant to.
	switch {
	case flag == "--name" && !logKeyName(name):
		return usageErr(fmt.Errorf("--name %q: a checkpoint key is named for its log, as host/path", name), "bailiff keygen --name audit.example.com/mail -o audit")
	case flag == "--approver" && logKeyName(name):
		return usageErr(fmt.Errorf("--approver %q: an approver key is named for a person, with no /", name), "bailiff keygen --approver lee")
	}
	return nil
}

// logKeyName tells a checkpoint key's name (a log origin, host/path) from
// an approver's.
func logKeyName(name string) bool { return strings.Contains(name, "/") }

// wantLogKey refuses an approver's key given where a checkpoint key is
// needed; wantApproverKey the reverse.
func wantLogKey(file, key string) error {
	if name := chain.KeyName(key); !logKeyName(name) {
		return usageErr(fmt.Errorf("%s is an approver key (for %s), not a checkpoint key", file, name), "a checkpoint key is named for its log: bailiff keygen --name audit.example.com/mail -o audit")
	}
	return nil
}

func wantApproverKey(file, key string) error {
	if name := chain.KeyName(key); logKeyName(name) {
		return usageErr(fmt.Errorf("%s is a checkpoint key (for the log %s), not an approver key", file, name), "bailiff keygen --approver NAME makes an approver key")
	}
	return nil
}
