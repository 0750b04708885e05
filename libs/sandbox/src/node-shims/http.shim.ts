// Node's `http` client over the host's egress-guarded, streamed requests (see http-client.ts).
import client = require('./http-client');

export = client.clientModule('http:');
