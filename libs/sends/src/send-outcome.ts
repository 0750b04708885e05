import type { SendsConfig } from '@app/config';

/** The `$.send.*` kinds `performSend` carries out; `emit` and `sse` belong to the workflow engine. */
export type PerformedSendKind = 'http' | 'email' | 's3';

/**
 * What one `$.send.*` did, as plain JSON for a run event. Never holds a response body beyond
 * `responseExcerpt`, nor credentials: `destination` names where the send went without them.
 */
export interface SendOutcome {
  kind: string;
  ok: boolean;
  /** HTTP status of the HTTP send or of the S3 PUT; absent for email and the outbox. */
  status?: number;
  /** Why the send failed (validation, refused destination, network, timeout, SMTP or S3 error). */
  error?: string;
  /**
   * Where it went: `POST http://host/path` (query and credentials left out), `smtp://host:port`
   * with the recipients, `s3://bucket/key` on the endpoint, or `outbox/...` (relative to the data dir).
   */
  destination: string;
  durationMs: number;
  /** When the send started (epoch ms). */
  at: number;
  /** The first bytes of the response body (HTTP send, S3 error answer), at most RESPONSE_EXCERPT_BYTES. */
  responseExcerpt?: string;
}

/** What `performSend` needs from the server: configuration and the identity of this send. */
export interface SendContext {
  /** The server's data directory: the outbox is `<dataDir>/outbox/`. */
  dataDir: string;
  /** `SLUICE_COMPONENT_EGRESS_ALLOW`: `$.send.http` is component traffic, judged like its `fetch`. */
  componentEgressAllow: string[];
  sends: SendsConfig;
  /**
   * Names this send in file and object names (`<timestamp>-<sendId>.json`; characters other than
   * `[A-Za-z0-9_-]` are replaced). With a stable id (run, step, index) and a `now` that gives the
   * time recorded with the step, a send performed again after a crash rewrites the same outbox
   * file or S3 object instead of adding a second one.
   */
  sendId: string;
  /** The sending account's e-mail address, when it has one; otherwise `SLUICE_SMTP_TO`. */
  recipient?: string;
  /** The send's time (epoch ms): `at` of the outcome and the timestamp in names. Default: the clock. */
  now?: () => number;
}

/** Response bytes kept in `responseExcerpt`. */
export const RESPONSE_EXCERPT_BYTES = 1024;
