#!/usr/bin/env node
/**
 * The machine's raw argon2id rate: N worker threads (default: one per core), each calling
 * argon2.verify() on the same hash in a loop for a fixed time; prints verifications per second.
 * The benchmark passes the hash of its own user (m=19456, t=2, p=1, as the service writes
 * them), so ValidateUser is compared with exactly the work it has to do.
 *
 * Usage: node bench/argon2-rate.mjs [--threads N] [--seconds S] [--hash PHC --password-env VAR]
 * Prints `BENCH_RESULT {"threads":N,"seconds":S,"verifications":V,"rate":R}`.
 */
import { availableParallelism } from 'node:os';
import process from 'node:process';
import { URL } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import argon2 from 'argon2';
import { argValue } from './lib/args.mjs';

if (!isMainThread) {
  const { hash, password, deadline } = workerData;
  let count = 0;
  while (Date.now() < deadline) {
    if (!(await argon2.verify(hash, password))) throw new Error('the hash does not verify the password');
    count += 1;
  }
  parentPort.postMessage(count);
} else {
  const threads = Number(argValue('--threads', String(availableParallelism())));
  const seconds = Number(argValue('--seconds', '5'));
  const password = process.env[argValue('--password-env', 'BENCH_ARGON2_PASSWORD')] ?? 'bench-password';
  const hash = argValue('--hash', null) ?? await argon2.hash(password, { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 });
  // Warm up once (the first call loads the module's native code into each thread).
  await argon2.verify(hash, password);
  const cpuBefore = process.cpuUsage();
  const started = Date.now();
  const deadline = started + seconds * 1000;
  const counts = await Promise.all(Array.from({ length: threads }, () => new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { hash, password, deadline } });
    worker.once('message', resolve);
    worker.once('error', reject);
  })));
  const elapsed = (Date.now() - started) / 1000;
  const verifications = counts.reduce((a, b) => a + b, 0);
  const cpu = process.cpuUsage(cpuBefore);
  // CPU per verification is less sensitive to other load on the machine than the rate.
  const cpuMsPerVerification = (cpu.user + cpu.system) / 1000 / verifications;
  process.stdout.write(`BENCH_RESULT ${JSON.stringify({ threads, seconds: elapsed, verifications, rate: verifications / elapsed, cpuMsPerVerification })}\n`);
}
