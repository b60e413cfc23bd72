// CoreDNS for the dev environment's remote clusters, with only the plugins their Corefile uses
// (devenv/network/dns.py): built from the pinned CoreDNS module as CoreDNS documents
// for a custom plugin set (coremain with the plugins imported), instead of its default set, whose
// cloud DNS plugins bring the AWS, Azure and Google SDKs into the build.
package main

import (
	"flag"

	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	flag.Parse()
	coremain.Run()
}
