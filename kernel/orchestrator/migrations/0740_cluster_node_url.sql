-- Each node's own address (its listener, not a load balancer's public URL): where svc-admin
-- debug-bundle --fleet and diagnose reach every live node. `address` stays the public URL.
ALTER TABLE cluster_nodes ADD COLUMN node_url text;
