// Package telemetry is what a gateway shows the tools a platform team
// already watches: Prometheus metrics of its decisions, the time it adds,
// its upstreams and its audit writes. It is told what happened and never
// changes it: no decision reads a metric.
//
// Every label value comes from a bounded set. Server, tool and check
// names are the gateway's, the policy's or, for tools, the server's own
// listing, which a malicious server can make as long as it likes; each
// dimension keeps its first values up to a cap and counts the rest under
// "_other", so no input makes series without end.
package telemetry
