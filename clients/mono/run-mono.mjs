#!/usr/bin/env node
/**
 * Builds and runs the .NET (Mono) client: generates proxies from the live WSDL with Mono's `wsdl`
 * tool for the Soap, Soap12, HttpGet and HttpPost protocols, compiles them with Client.cs using
 * `mcs` (once per run), then runs the program with `mono`.
 *
 * Usage: node clients/mono/run-mono.mjs <fixture.json> <work-dir>
 * Output: the RESULT / VERSION lines of the program (see scripts/test-clients.mjs). If the proxies
 * cannot be generated or compiled, every check fails with the reason.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const [fixtureFile, workRoot] = process.argv.slice(2);
const fx = JSON.parse(await readFile(fixtureFile, 'utf8'));
const work = join(workRoot, 'mono');
await mkdir(work, { recursive: true });

const PROTOCOLS = { soap11: 'Soap', soap12: 'Soap12', httpget: 'HttpGet', httppost: 'HttpPost' };
const CHECKS = ['wsdl', 'login-ok', 'login-bad', 'token-ok', 'token-bad', 'whatsnew', 'login-url', 'json-user', 'json-token', 'fault'];

function run(file, args, timeoutMs) {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: work, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024, env: { ...process.env, MONO_ENV_OPTIONS: '' } },
      (error, stdout, stderr) => resolve({ ok: !error, error, stdout, stderr }));
  });
}

function failAll(protocols, reason) {
  const text = reason.replace(/\s+/g, ' ').slice(0, 300);
  for (const p of protocols) for (const c of CHECKS) process.stdout.write(`RESULT mono ${p} ${c} FAIL ${text}\n`);
}

const t0 = Date.now();
// 1. Proxies from the WSDL, one per protocol, each in its own namespace (PSoap, PSoap12, ...).
const generated = await Promise.all(Object.entries(PROTOCOLS).map(async ([protocol, wsdlProtocol]) => {
  const out = join(work, `${wsdlProtocol}.cs`);
  const r = await run('wsdl', ['-nologo', `-protocol:${wsdlProtocol}`, `-namespace:P${wsdlProtocol}`, `-out:${out}`, fx.wsdl], 60_000);
  return { protocol, out, ...r };
}));
const failedGen = generated.filter((g) => !g.ok || !/Writing file/.test(g.stdout));
// Mono's wsdl tool leaves out the [return: XmlRoot] that .NET's wsdl.exe writes on HTTP GET/POST
// proxy methods returning a DataTable (Mono's XmlCodeExporter.AddMappingMetadata only emits it for
// primitive and array results), so the generated proxy would expect <DataTable xmlns=""> and reject
// the <DataTable xmlns="SVCAPI"> that ASMX (the legacy service, and ours byte for byte) sends.
// Add it as .NET's tool would. See docs/compatibility.md.
const RETURN_ROOT = '[return: System.Xml.Serialization.XmlRootAttribute("DataTable", Namespace="SVCAPI", IsNullable=true)]';
for (const g of generated.filter((x) => x.ok && (x.protocol === 'httpget' || x.protocol === 'httppost'))) {
  const code = await readFile(g.out, 'utf8');
  const patched = code.replace(/(\n(\s*)\[System\.Web\.Services\.Protocols\.HttpMethodAttribute\([^\n]*\)\]\n)(\s*public System\.Data\.DataTable \w+\()/g,
    (_m, attr, indent, decl) => `${attr}${indent}${RETURN_ROOT}\n${decl}`);
  if (patched === code) process.stderr.write(`note: no DataTable method patched in ${g.out}\n`);
  await writeFile(g.out, patched);
}
if (failedGen.length > 0) {
  for (const g of failedGen) process.stderr.write(`wsdl -protocol:${PROTOCOLS[g.protocol]} failed:\n${g.stdout}${g.stderr}\n`);
  failAll(Object.keys(PROTOCOLS), `wsdl tool failed for ${failedGen.map((g) => g.protocol).join(', ')}: ${(failedGen[0].stdout + failedGen[0].stderr).trim()}`);
  process.exit(1);
}
const tGen = Date.now();

// 2. One assembly with the four proxies and the test program.
const exe = join(work, 'client.exe');
const mcs = await run('mcs', [
  '-nologo', '-nowarn:618', '-optimize+', `-out:${exe}`,
  '-r:System.Web.Services.dll', '-r:System.Data.dll', '-r:System.Xml.dll', '-r:System.Web.Extensions.dll', '-r:System.Core.dll', '-r:System.EnterpriseServices.dll',
  join(HERE, 'Client.cs'), ...generated.map((g) => g.out),
], 120_000);
if (!mcs.ok) {
  process.stderr.write(`mcs failed:\n${mcs.stdout}${mcs.stderr}\n`);
  failAll(Object.keys(PROTOCOLS), `mcs failed: ${(mcs.stdout + mcs.stderr).trim()}`);
  process.exit(1);
}
const tBuild = Date.now();

// 3. Run it; its output is ours.
const mcsVersion = (await run('mcs', ['--version'], 30_000)).stdout.trim();
process.stdout.write(`VERSION mono ${mcsVersion}; proxies by Mono wsdl tool\n`);
const program = await run('mono', ['--debug', exe, fixtureFile], 180_000);
process.stdout.write(program.stdout);
process.stderr.write(program.stderr);
process.stderr.write(`mono: wsdl ${(tGen - t0) / 1000}s, mcs ${(tBuild - tGen) / 1000}s, run ${(Date.now() - tBuild) / 1000}s\n`);
if (!program.ok) {
  process.stderr.write(`mono exited: ${program.error?.message}\n`);
  process.exit(1);
}
