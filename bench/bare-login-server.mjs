#!/usr/bin/env node
/**
 * The least a login costs an event loop on this machine: node:http, one argon2id verification of
 * the benchmark user's own hash on libuv's thread pool (the argon2 package, as the service uses
 * it), and a fixed answer. Nothing is parsed, stored, logged or timed: no database, no token, no
 * audit trail, no metrics. bench.mjs loads it like its login cells (16 connections) after them and
 * reports its main thread's CPU a login beside the service's: what any Node.js login service pays
 * here for being woken by a request and again by its hash's end, whatever else it does.
 *
 * Usage: node bench/bare-login-server.mjs [--host 127.0.0.1] [--port 0] --hash PHC [--password-env VAR]
 * A GET is answered 200 at once (bench/lib/servers.mjs asks `?WSDL` to know it is ready); any other
 * request is answered once the hash has verified the password (500 if it does not).
 */
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';
import process from 'node:process';
import argon2 from 'argon2';
import { argValue } from './lib/args.mjs';
import { listenAsService } from './lib/listen.mjs';

const host = argValue('--host', '127.0.0.1');
const port = Number(argValue('--port', '0'));
const hash = argValue('--hash', null);
const password = process.env[argValue('--password-env', 'BENCH_ARGON2_PASSWORD')];
if (hash === null || password === undefined) {
  process.stderr.write('usage: bare-login-server.mjs --hash PHC --password-env VAR (the variable holding the password)\n');
  process.exit(2);
}

const OK = Buffer.from('true');
const server = createServer((req, res) => {
  req.resume();
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': OK.length });
    res.end(OK);
    return;
  }
  req.once('end', () => {
    argon2.verify(hash, password).then((ok) => {
      res.writeHead(ok ? 200 : 500, { 'content-type': 'text/plain', 'content-length': OK.length });
      res.end(OK);
    }, () => {
      res.writeHead(500, { 'content-length': 0 });
      res.end();
    });
  });
});
listenAsService(server, host, port);
