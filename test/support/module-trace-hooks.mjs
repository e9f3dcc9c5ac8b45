/** Loader hooks of module-trace.mjs: appends each resolved module URL to the file it was given. */
import { appendFileSync } from 'node:fs';

let file = null;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  if (file !== null) appendFileSync(file, `esm ${result.url}\n`);
  return result;
}
