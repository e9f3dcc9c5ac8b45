/** The time source of the domain; injected so tests can move time without waiting. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = Object.freeze({ now: (): Date => new Date() });
