/**
 * Slows password guessing without letting anyone lock an admin out (docs/reference/security.md,
 * "Sign-in throttle").
 *
 * - Per client address, and per (account, address): each attempt books the next free time of its
 *   keys, assuming it fails, so guesses from one address are spaced 0.5 s, 1 s, 2 s ... up to
 *   8 s apart after failures, whether they come one by one or in parallel. An attempt whose
 *   turn is more than 8 s away is refused (429 with Retry-After) without checking the password.
 *   An address may fail 5 times (any accounts) before its own spacing starts; the pair's starts
 *   at the first failure. A success forgets the pair. These entries are bounded: the least
 *   recently used is dropped when the table is full.
 * - Per account (existing accounts only): after 100 failures within 15 minutes, every attempt on
 *   the account waits 1 s before its check. That wait is not booked, so it never refuses and
 *   never queues: the right password from a clean address still signs in. These entries live in
 *   their own table, which address churn cannot flush.
 *
 * Kept in memory: each process throttles the attempts it sees.
 */

import { normalizeEmail } from "../../domain/admins/admins.js";

const windowMs = 15 * 60 * 1000;
const maxSpacingMs = 8000;

export interface SignInAttempt {
  readonly account: string;
  /** What to wait before checking the password. */
  readonly waitMs: number;
  readonly pairKey: string;
  readonly addressKey: string;
}

export type SignInVerdict =
  { allowed: true; attempt: SignInAttempt } | { allowed: false; retryAfterSeconds: number };

interface KeyState {
  failures: number;
  /** When the next attempt on this key may run (epoch ms). */
  nextAt: number;
  lastAt: number;
}

interface AccountState {
  windowStart: number;
  failures: number;
}

export interface SignInThrottleLimits {
  /** Failures an address may have (any accounts) before its own spacing starts. */
  freeAddressFailures: number;
  accountFailures: number;
  accountWaitMs: number;
  maxAddressEntries: number;
  maxAccountEntries: number;
}

export const defaultSignInLimits: SignInThrottleLimits = {
  freeAddressFailures: 5,
  accountFailures: 100,
  accountWaitMs: 1000,
  maxAddressEntries: 10_000,
  maxAccountEntries: 1_000,
};

/** The spacing after `failures` failures: 0, then 0.5 s doubling up to 8 s. */
export function spacingMs(failures: number): number {
  return failures <= 0 ? 0 : Math.min(500 * 2 ** (failures - 1), maxSpacingMs);
}

export class SignInThrottle {
  readonly #addresses = new Map<string, KeyState>();
  readonly #accounts = new Map<string, AccountState>();
  readonly #limits: SignInThrottleLimits;

  constructor(limits: Partial<SignInThrottleLimits> = {}) {
    this.#limits = { ...defaultSignInLimits, ...limits };
  }

  /** Entries held: bounded by maxAddressEntries and maxAccountEntries. */
  get size(): { addresses: number; accounts: number } {
    return { addresses: this.#addresses.size, accounts: this.#accounts.size };
  }

  /** Books an attempt, or refuses it when its address's or pair's turn is too far away. */
  begin(ip: string, email: string, now = Date.now()): SignInVerdict {
    // Bounded: an email longer than any real one (255) cannot grow the table's keys.
    const account = normalizeEmail(email).slice(0, 256);
    const addressKey = `ip:${ip}`;
    const pairKey = `pair:${account}\n${ip}`;
    const address = this.#current(addressKey, now);
    const pair = this.#current(pairKey, now);
    const runAt = Math.max(now, address?.nextAt ?? now, pair?.nextAt ?? now);
    if (runAt - now > maxSpacingMs) {
      return { allowed: false, retryAfterSeconds: Math.ceil((runAt - now - maxSpacingMs) / 1000) };
    }
    const free = this.#limits.freeAddressFailures;
    this.#book(addressKey, address, runAt, (failures) => spacingMs(failures - free));
    this.#book(pairKey, pair, runAt, spacingMs);
    const waitMs = runAt - now + (this.#underAttack(account, now) ? this.#limits.accountWaitMs : 0);
    return { allowed: true, attempt: { account, waitMs, pairKey, addressKey } };
  }

  /** Settles a booked attempt; `accountExists` says whether a failure counts for the account. */
  end(
    attempt: SignInAttempt,
    outcome: { succeeded: boolean; accountExists: boolean },
    now = Date.now(),
  ): void {
    if (outcome.succeeded) {
      this.#addresses.delete(attempt.pairKey);
      const address = this.#addresses.get(attempt.addressKey);
      if (address) address.failures = Math.max(0, address.failures - 1);
      return;
    }
    if (outcome.accountExists) this.#countAccountFailure(attempt.account, now);
  }

  /** The key's state, or undefined once it has been quiet for the whole window. */
  #current(key: string, now: number): KeyState | undefined {
    const state = this.#addresses.get(key);
    if (state && now - state.lastAt > windowMs && now >= state.nextAt) {
      this.#addresses.delete(key);
      return undefined;
    }
    return state;
  }

  /** Counts the attempt as a failure until it succeeds, and books the key's next turn. */
  #book(
    key: string,
    state: KeyState | undefined,
    runAt: number,
    spacing: (failures: number) => number,
  ): void {
    const failures = (state?.failures ?? 0) + 1;
    // Re-inserted so that the Map's order is least recently used first.
    this.#addresses.delete(key);
    if (this.#addresses.size >= this.#limits.maxAddressEntries) {
      const oldest = this.#addresses.keys().next().value;
      if (oldest !== undefined) this.#addresses.delete(oldest);
    }
    this.#addresses.set(key, { failures, nextAt: runAt + spacing(failures), lastAt: runAt });
  }

  #underAttack(account: string, now: number): boolean {
    const state = this.#accounts.get(account);
    return (
      state !== undefined &&
      now - state.windowStart < windowMs &&
      state.failures >= this.#limits.accountFailures
    );
  }

  #countAccountFailure(account: string, now: number): void {
    const state = this.#accounts.get(account);
    if (state && now - state.windowStart < windowMs) {
      state.failures += 1;
      return;
    }
    if (!state && this.#accounts.size >= this.#limits.maxAccountEntries) this.#dropStale(now);
    this.#accounts.set(account, { windowStart: now, failures: 1 });
  }

  /** Only existing accounts are counted, so this table fills only with more admins than it holds. */
  #dropStale(now: number): void {
    for (const [account, state] of this.#accounts) {
      if (now - state.windowStart >= windowMs) this.#accounts.delete(account);
    }
    if (this.#accounts.size >= this.#limits.maxAccountEntries) {
      const oldest = this.#accounts.keys().next().value;
      if (oldest !== undefined) this.#accounts.delete(oldest);
    }
  }
}
