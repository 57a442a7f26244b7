"""A small fault-injecting TCP proxy (asyncio) with a compatible subset of Toxiproxy's HTTP control
API, so the chaos tests run against it here and against a real Toxiproxy where one exists.

Supported: proxies (create, read, update enabled/upstream, delete), toxics `latency`, `timeout`,
`reset_peer` and `limit_data` on the `upstream` or `downstream` stream with a `toxicity`
(probability), and `POST /reset`. One difference from Toxiproxy, on purpose: Toxiproxy draws a
toxic's toxicity once per connection, so with HTTP keep-alive a connection that drew "no fault"
stays clean for every later request; here it is drawn again per request/response exchange (a
request after a reply), so `toxicity: 0.2` means about one request in five.

`proxy` is the data plane (the proxies and their toxics, on asyncio), `server` the control API that
manages them, `client` a client of that API (ours or a real Toxiproxy's).

"The write committed, and the response was lost" is a downstream `limit_data` with `bytes: 0`: the
request reaches the server in full; the connection closes when the first byte of the reply comes."""
