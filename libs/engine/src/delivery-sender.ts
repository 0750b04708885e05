import type { EventStore } from '@app/event-store';
import { EventTypes, SealedSecret, SecretBox, Streams } from '@app/domain';
import type { SluiceEvent } from '@app/domain';
import type { NewDelivery, ReadModelQueries, WebhookRow } from '@app/projections';
import { deliverWebhook, EgressPolicy, nextAttemptDelayMs } from '@app/delivery';

/** A delivery to attempt: as the projection created it, plus the attempts already recorded. */
export interface DeliveryJob extends NewDelivery {
  attempts: number;
}

export interface DeliverySenderOptions {
  retrySchedule: number[];
  timeoutMs: number;
  egress: EgressPolicy;
  concurrencyPerWebhook: number;
}

/**
 * How long an outcome may wait for another append to commit with (ms), when it is the only
 * delivery this process has in flight: at 10 events/s and up the next request comes first, so the
 * outcome rides on its commit instead of waking the loop for a commit of its own. Meanwhile the
 * delivery reads as pending (it is not sent again: it stays in flight until recorded); a crash
 * meanwhile sends it again with the same `webhook-id`.
 */
export const OUTCOME_LINGER_ALONE_MS = 100;
/**
 * The same while other deliveries are in flight (busy rates, where commits follow each other
 * anyway). 100 ms there cost 13-15% more CPU per event at saturation in alternated A/Bs, for a
 * reason not found (commits, statements and timers per event were the same).
 */
export const OUTCOME_LINGER_BUSY_MS = 10;

/**
 * Outcomes are acknowledged at their commit, without waiting for an fsync: losing one (a power
 * loss before the next fsync) only sends that delivery again, with the same `webhook-id`. They
 * may wait to share a commit with other appends (the next request's, say); the webhook's lane
 * does not wait for them (see `pump`).
 */
const OUTCOME_ALONE = { durability: 'commit', lingerMs: OUTCOME_LINGER_ALONE_MS } as const;
const OUTCOME_BUSY = { durability: 'commit', lingerMs: OUTCOME_LINGER_BUSY_MS } as const;

/** Deliveries queued in memory per webhook; more stay in the durable schedule until the poll finds room. */
const MAX_QUEUED_PER_LANE = 1000;
/** Due rows one poll takes, in all and per webhook. */
const POLL_PAGE = 10_000;
/** When a poll could not take everything due, or failed: the next one is this much later (ms). */
const POLL_AGAIN_MS = 1000;
/** setTimeout cannot wait longer than 2^31-1 ms; a later wake-up fires early and re-arms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface WebhookLane {
  active: number;
  queue: DeliveryJob[];
  /** A delivery was left in the durable schedule because the queue was full: refill once it has room. */
  overflowed: boolean;
}

/**
 * Sends deliveries with a bounded number in flight per webhook, so one slow or dead webhook never
 * delays the others: each webhook has its own lane, a lane keeps at most MAX_QUEUED_PER_LANE
 * deliveries in memory, and the poll takes due rows round-robin over webhooks, so a flood for one
 * webhook neither fills memory nor hides another webhook's due rows. Every outcome is recorded as
 * an event in `delivery-<wh>`; the retry schedule is the deliveries read model (due rows are
 * picked up by a poll), so retries survive restarts.
 *
 * The schedule is polled only when something can be due: once at start (work left by a previous
 * process), at the earliest future attempt time the schedule holds (one timer, re-armed after each
 * poll and when a later retry is recorded), when a lane that left rows in the schedule has room
 * again, and a second after a poll that could not take everything or failed. An idle server
 * with nothing to retry has no timer at all.
 */
export class DeliverySender {
  private readonly lanes = new Map<string, WebhookLane>();
  private readonly inFlight = new Set<string>();
  /** Deliveries waiting on an in-process retry timer. */
  private readonly waiting = new Set<string>();
  /**
   * Attempts recorded by this process whose outcome the read models have not folded yet, so a poll
   * does not resend what the schedule still shows as due. An entry goes once its outcome is folded
   * ({@link outcomeFolded}); it used to stay until a poll met the row again, which a delivered row
   * never is, so every delivery of the process's life stayed in memory (until a poll found over
   * 100,000 of them, and polls come only for retries and backlogs).
   */
  private readonly recorded = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The one timer for the next poll of the schedule, and when it fires (Infinity: none). */
  private poller?: NodeJS.Timeout;
  private pollAt = Infinity;
  private stopped = false;

  constructor(
    private readonly store: EventStore<SluiceEvent>,
    private readonly queries: ReadModelQueries,
    private readonly box: SecretBox,
    private readonly opts: DeliverySenderOptions,
  ) {}

  /** Sends what the schedule holds due now (left by a previous process), then waits for the next due row. */
  start(): void {
    this.poll();
  }

  /**
   * Polls the schedule, then arms the timer for its earliest attempt after the poll's own time:
   * both use one `now`, so a row that fell due while the poll ran (between `<= now` and a later
   * clock) is not missed by both; the timer for it fires at once.
   */
  private poll(): void {
    if (this.stopped) return;
    try {
      const now = Date.now();
      this.enqueueDue(now);
      const next = this.queries.nextDeliveryDueAfter(now);
      if (next !== undefined) this.pollNoLaterThan(next);
    } catch (err) {
      console.error('delivery poll failed', err);
      this.pollNoLaterThan(Date.now() + POLL_AGAIN_MS);
    }
  }

  /** Makes the next poll happen at `at` or earlier (one timer: an earlier time replaces a later one). */
  private pollNoLaterThan(at: number): void {
    if (this.stopped || at >= this.pollAt) return;
    if (this.poller) clearTimeout(this.poller);
    this.pollAt = at;
    this.poller = setTimeout(() => {
      this.poller = undefined;
      this.pollAt = Infinity;
      this.poll();
    }, Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())));
    this.poller.unref();
  }

  /** Queues every delivery of the durable schedule that is due and not already in flight. */
  enqueueDue(now = Date.now()): void {
    const rows = this.queries.dueDeliveries(now, MAX_QUEUED_PER_LANE, POLL_PAGE);
    // A full page, or rows the read model has not caught up with, may hide due work: look again shortly.
    let lookAgain = rows.length >= POLL_PAGE;
    const perWebhook = new Map<string, number>();
    for (const row of rows) {
      perWebhook.set(row.webhook_id, (perWebhook.get(row.webhook_id) ?? 0) + 1);
      if (this.inFlight.has(row.id) || this.waiting.has(row.id)) continue;
      const attempts = (JSON.parse(row.attempts) as unknown[]).length;
      const recorded = this.recorded.get(row.id);
      if (recorded !== undefined) {
        if (recorded > attempts) {
          lookAgain = true;
          continue;
        }
        this.recorded.delete(row.id);
      }
      // The body is the emit's, read from the log: the schedule keeps no copy of it. A row whose
      // position holds no emit cannot be sent as it was scheduled; it stays due, and is listed.
      const body = this.queries.deliveryBody(row.pos);
      if (body === undefined) continue;
      this.enqueue({
        deliveryId: row.id, webhookId: row.webhook_id, emitId: row.emit_id, emitterId: row.emitter_id,
        eventName: row.event_name, body, attempts,
      });
    }
    // Entries now leave as their outcomes are folded; this bounds them only while the read models lag far behind.
    if (this.recorded.size > 100_000) this.recorded.clear();
    // A webhook that filled its page may have more due rows than that: refill its lane once it has room.
    for (const [webhookId, count] of perWebhook) {
      if (count < MAX_QUEUED_PER_LANE) continue;
      const lane = this.lanes.get(webhookId);
      if (lane) lane.overflowed = true;
      else lookAgain = true;
    }
    if (lookAgain) this.pollNoLaterThan(now + POLL_AGAIN_MS);
  }

  /**
   * Queues one delivery (idempotent while it is in flight). When its lane is full it is left to
   * the durable schedule, where the poll finds it once the lane has room.
   */
  enqueue(job: DeliveryJob): void {
    if (this.stopped || this.inFlight.has(job.deliveryId)) return;
    let lane = this.lanes.get(job.webhookId);
    if (!lane) {
      lane = { active: 0, queue: [], overflowed: false };
      this.lanes.set(job.webhookId, lane);
    }
    if (lane.queue.length >= MAX_QUEUED_PER_LANE) {
      lane.overflowed = true;
      return;
    }
    this.inFlight.add(job.deliveryId);
    lane.queue.push(job);
    this.pump(job.webhookId, lane);
  }

  /** Number of deliveries queued or in flight in this process. */
  get pending(): number {
    return this.inFlight.size;
  }

  /**
   * Starts deliveries while the lane has room. A delivery holds its lane slot until its request
   * is answered (or failed), and stays in flight (not sent again) until its outcome is recorded.
   */
  private pump(webhookId: string, lane: WebhookLane): void {
    while (lane.active < this.opts.concurrencyPerWebhook && lane.queue.length > 0) {
      const job = lane.queue.shift()!;
      lane.active++;
      let answered = false;
      const freeSlot = () => {
        if (answered) return;
        answered = true;
        lane.active--;
        const refill = lane.overflowed && lane.queue.length <= MAX_QUEUED_PER_LANE / 2;
        if (refill) lane.overflowed = false;
        if (lane.active === 0 && lane.queue.length === 0) this.lanes.delete(webhookId);
        else this.pump(webhookId, lane);
        if (refill) this.poll();
      };
      const done = () => {
        this.inFlight.delete(job.deliveryId);
        freeSlot();
      };
      // One reaction for both ends (`catch` then `finally` made two promises more per delivery).
      this.attempt(job, freeSlot).then(done, (err: unknown) => {
        console.error(`delivery ${job.deliveryId} failed to record`, err);
        // Its row is still due in the schedule: try it again on a later poll.
        this.pollNoLaterThan(Date.now() + POLL_AGAIN_MS);
        done();
      });
    }
  }

  /** Sends one delivery and records its outcome; `answered` is called once the request is over, before the record. */
  private async attempt(job: DeliveryJob, answered: () => void): Promise<void> {
    const wh = this.webhook(job.webhookId);
    if (!wh) return; // The webhook was deleted: its deliveries went with it.
    if (!wh.active) return; // Disabled: kept pending in the schedule and sent when re-enabled.
    const now = Date.now();
    const secrets = [this.openSecret(wh.secret)];
    if (wh.prev_secret && wh.prev_valid_until && wh.prev_valid_until > now) secrets.push(this.openSecret(wh.prev_secret));
    const outcome = await deliverWebhook({
      url: wh.url, secrets, msgId: job.emitId, body: job.body, emitterId: job.emitterId, eventName: job.eventName,
      timeoutMs: this.opts.timeoutMs, policy: this.opts.egress,
    });
    answered();
    const attempt = job.attempts + 1;
    // The outcome's data is `base` and what the outcome adds, by Object.assign: a spread followed by
    // new members would give every outcome a hidden class of its own (see `metadataWithTime` in append-rules.ts).
    const base = { deliveryId: job.deliveryId, webhookId: job.webhookId, attempt, durationMs: Math.round(outcome.durationMs) };
    const stream = Streams.delivery(job.webhookId);
    this.recorded.set(job.deliveryId, attempt);
    // In flight until recorded: this delivery alone means no other outcome is coming soon.
    const recordWith = this.inFlight.size <= 1 ? OUTCOME_ALONE : OUTCOME_BUSY;
    if (outcome.ok) {
      // A delivered attempt got an answer, so it has a status (deliverWebhook's result type does not say so).
      await this.store.append(stream, [{ type: EventTypes.deliverySucceeded, data: Object.assign(base, { statusCode: outcome.statusCode! }) }], recordWith);
      return;
    }
    const delay = nextAttemptDelayMs(this.opts.retrySchedule, attempt, { retryAfterHeader: outcome.retryAfter });
    if (delay === null) {
      await this.store.append(stream, [{ type: EventTypes.deliveryExhausted, data: Object.assign(base, { statusCode: outcome.statusCode, error: outcome.error }) }], recordWith);
      return;
    }
    const nextAttemptAt = Date.now() + delay;
    await this.store.append(stream, [{
      type: EventTypes.deliveryAttemptFailed,
      data: Object.assign(base, { statusCode: outcome.statusCode, error: outcome.error, nextAttemptAt }),
    }], recordWith);
    // Short delays are timed here; longer ones (and everything after a restart) come from the poll.
    if (delay >= 60_000) this.pollNoLaterThan(nextAttemptAt);
    else if (!this.stopped) {
      this.waiting.add(job.deliveryId);
      const t = setTimeout(() => {
        this.timers.delete(t);
        this.waiting.delete(job.deliveryId);
        this.enqueue(Object.assign({}, job, { attempts: attempt }));
      }, delay);
      t.unref();
      this.timers.add(t);
    }
  }

  /**
   * The read models folded the outcome of `attempt` of `deliveryId` (after their commit, inline or
   * caught up): the schedule now shows it, so the process need not remember it.
   */
  outcomeFolded(deliveryId: string, attempt: number): void {
    const recorded = this.recorded.get(deliveryId);
    if (recorded !== undefined && recorded <= attempt) this.recorded.delete(deliveryId);
  }

  /** Outcomes recorded by this process that the read models have not folded yet. */
  get outcomesAwaitingFold(): number {
    return this.recorded.size;
  }

  /** Decrypts a stored signing secret; cached by its sealed form (a rotation seals a new value). */
  private openSecret(sealedJson: string): string {
    let plain = this.secrets.get(sealedJson);
    if (plain === undefined) {
      plain = this.box.open(JSON.parse(sealedJson) as SealedSecret);
      if (this.secrets.size > 10_000) this.secrets.clear();
      this.secrets.set(sealedJson, plain);
    }
    return plain;
  }

  private readonly secrets = new Map<string, string>();

  /**
   * The webhook's read-model row, kept between deliveries: the runtime calls
   * {@link forgetWebhook} after every commit that changes a webhook (update, rotation, deletion),
   * so a delivery never uses a row older than the last committed change it could have seen.
   * A missing row is not kept.
   */
  private webhook(id: string): WebhookRow | undefined {
    let row = this.webhooks.get(id);
    if (row === undefined) {
      row = this.queries.webhook(id);
      if (row === undefined) return undefined;
      if (this.webhooks.size >= 10_000) this.webhooks.clear();
      this.webhooks.set(id, row);
    }
    return row;
  }

  /** Drops the kept row of a webhook; call once a change to it is committed to the read models. */
  forgetWebhook(id: string): void {
    this.webhooks.delete(id);
  }

  private readonly webhooks = new Map<string, WebhookRow>();

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.poller) clearTimeout(this.poller);
    this.pollAt = -Infinity;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
