/**
 * A shadowed server's comparison counts (svcapi_auth_shadow_total by result, summed over
 * operations and bindings) and the CPU seconds its shadow budget charged
 * (svcapi_auth_shadow_cpu_seconds_total), read from its management listener's /metrics.
 */
export async function shadowCounts(managementUrl) {
  const text = await (await globalThis.fetch(`${managementUrl}/metrics`)).text();
  const counts = { same: 0, different: 0, error: 0, dropped: 0, chargedS: 0 };
  for (const m of text.matchAll(/^svcapi_auth_shadow_total\{([^}]*)\} (\d+)/gm)) {
    const result = /result="(\w+)"/.exec(m[1])?.[1];
    if (result !== undefined && result in counts) counts[result] += Number(m[2]);
  }
  counts.chargedS = Number(/^svcapi_auth_shadow_cpu_seconds_total (\S+)/m.exec(text)?.[1] ?? NaN);
  return counts;
}

/** What changed between two shadowCounts() readings. */
export const countsSince = (before, after) => Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]));

/** The management listener's URL from a server's start-up output (its "Management:" line), or null. */
export const managementUrlOf = (output) => /^Management: (http:\/\/\S+?)\/? /m.exec(output)?.[1] ?? null;
