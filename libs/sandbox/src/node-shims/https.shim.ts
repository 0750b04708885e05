// Node's `https` client: the same as `http` (http-client.ts) with `https:` as the default
// protocol. TLS is the host's: certificates are verified by Node's defaults on the host side.
import client = require('./http-client');

export = client.clientModule('https:');
