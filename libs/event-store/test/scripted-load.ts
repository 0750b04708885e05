import { FsyncPlacement } from '../src/fsync-placement';

/**
 * The real `auto` placement (the slow-disk rule included) on a loop it always finds with time to
 * spare: the loop's measured load is left out, since what it is on a shared machine under a test
 * runner is not a test's to rely on. Only the disk's speed decides.
 */
export class QuietLoop extends FsyncPlacement {
  constructor() {
    super('auto');
  }

  override observe(): void {
    // The measured load is ignored: the loop stays "time to spare".
  }
}

/** A placement whose view of the loop's load the test sets: quiet (fsync on the loop) or saturated (on the pool). */
export class ScriptedLoad extends FsyncPlacement {
  quiet = true;

  constructor() {
    super('auto');
  }

  override next(): boolean {
    return this.quiet;
  }

  override get placedOnLoop(): boolean {
    return this.quiet;
  }

  override get loopHasTimeToSpare(): boolean {
    return this.quiet;
  }

  override get loopSaturated(): boolean {
    return !this.quiet;
  }
}
