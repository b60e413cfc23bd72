"""The read-only web dashboard the extender serves under /dashboard/ (docs/dashboard.md): queues'
shares over the last hour, gangs and pods with why they wait, remote clusters, one pod's or
gang's story. Static ES modules + HTML + CSS, and JSON from the extender's informer caches."""
