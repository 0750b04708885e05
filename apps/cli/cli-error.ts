/**
 * Exit codes `pd` guarantees to scripts (also printed by `pd help`):
 * 0 done; 1 the command failed (the server refused it, a run failed, a name matched nothing);
 * 2 usage error (bad or missing arguments, a missing local file, a required prop left unset);
 * 3 the server could not be reached; 4 no API key or the key was refused (401).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, unreachable: 3, auth: 4 } as const;

/** A failure `pd` reports as one line (`error: ...`) and ends with `exitCode`. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: number = EXIT.failed) {
    super(message);
    this.name = 'CliError';
  }

  /** Bad or missing arguments: exit 2. */
  static usage(message: string): CliError {
    return new CliError(message, EXIT.usage);
  }
}

/** An error answer of the REST API, kept whole so that callers can branch on `status` / `code`. */
export class ServerError extends CliError {
  constructor(readonly status: number, readonly code: string, message: string, readonly details?: unknown) {
    // One line: the server's own message and its machine code.
    super(`${message} (${code})`, status === 401 ? EXIT.auth : EXIT.failed);
    this.name = 'ServerError';
  }
}
