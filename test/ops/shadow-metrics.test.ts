/**
 * svcapi_auth_shadow_total (docs/cutover.md, "Front and shadow"): every sampled request ends in
 * one count, by result and by the operation and binding of our dispatch. Tallied between scrapes
 * (src/ops/tallies.ts): at saturation nearly every request is counted as dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type ServiceMetrics } from '../../src/ops/metrics.js';
import { createTestStack, type TestStack } from '../support/start-app.js';

describe('shadow comparison counts', () => {
  let stack: TestStack;
  let metrics: ServiceMetrics;
  beforeAll(async () => {
    stack = await createTestStack();
    metrics = createMetrics({ store: stack.store, processMetrics: false });
  });
  afterAll(async () => {
    await stack.close();
  });

  const series = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('svcapi_auth_shadow_total{')).sort();

  it('counts each outcome by operation and binding, adding up scrape after scrape; label values only from fixed sets', async () => {
    for (let i = 0; i < 1000; i++) metrics.shadowResult('dropped', 'ValidateUserToken', 'soap11');
    metrics.shadowResult('same', 'ValidateUserToken', 'soap11');
    metrics.shadowResult('different', 'WhatsNew', 'http-get');
    metrics.shadowResult('error', null, 'doc');
    // Not from our dispatch: an unknown operation or binding is counted under "none".
    metrics.shadowResult('same', 'DropTables', 'soap11');
    metrics.shadowResult('same', 'ValidateUserToken', 'gopher');
    expect(series(await metrics.registry.metrics())).toEqual([
      'svcapi_auth_shadow_total{result="different",operation="WhatsNew",binding="http-get"} 1',
      'svcapi_auth_shadow_total{result="dropped",operation="ValidateUserToken",binding="soap11"} 1000',
      'svcapi_auth_shadow_total{result="error",operation="doc",binding="doc"} 1',
      'svcapi_auth_shadow_total{result="same",operation="ValidateUserToken",binding="none"} 1',
      'svcapi_auth_shadow_total{result="same",operation="ValidateUserToken",binding="soap11"} 1',
      'svcapi_auth_shadow_total{result="same",operation="none",binding="soap11"} 1',
    ]);
    for (let i = 0; i < 5; i++) metrics.shadowResult('dropped', 'ValidateUserToken', 'soap11');
    expect(series(await metrics.registry.metrics())).toContain('svcapi_auth_shadow_total{result="dropped",operation="ValidateUserToken",binding="soap11"} 1005');
  });
});
