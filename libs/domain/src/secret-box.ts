import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** An encrypted value as stored in events and read models: never the clear text. */
export interface SealedSecret {
  $sealed: string;
}

/**
 * AES-256-GCM with a key kept outside the event store. `seal` output is self-contained
 * (iv + tag + ciphertext) and authenticated: a tampered value fails to open.
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('SecretBox needs a 32-byte key');
  }

  seal(plain: string): SealedSecret {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return { $sealed: Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64') };
  }

  open(sealed: SealedSecret): string {
    const raw = Buffer.from(sealed.$sealed, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }

  static isSealed(v: unknown): v is SealedSecret {
    return typeof v === 'object' && v !== null && typeof (v as SealedSecret).$sealed === 'string';
  }
}
