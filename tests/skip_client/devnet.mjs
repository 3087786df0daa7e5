// Drives weaver's router on the default devnet with the real @skip-go/client SDK: every API
// call of the SDK but `submit` (the service never broadcasts) — chains, assets, route,
// messages, messagesDirect, assetsFromSource, assetsBetweenChains, recommendAssets,
// ibcOriginAssets, balances, venues, bridges, trackTransaction and transactionStatus.
// Prints one JSON summary (what each call answered, as the SDK hands it to a wallet) for the
// Rust test to check.
//   usage: node devnet.mjs INPUT.json   (apiUrl, address, denoms)
import { readFileSync } from 'node:fs';
import {
  setApiOptions, chains, assets, route, messages, messagesDirect, assetsFromSource,
  assetsBetweenChains, recommendAssets, ibcOriginAssets, balances, venues, bridges,
  trackTransaction, transactionStatus,
} from '@skip-go/client';

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { apiUrl, address, initOnMove, usdcOnMove, usdcDirectOnMove, trackedHash } = input;
setApiOptions({ apiUrl });
const summary = {};
const keysOf = (op) => Object.keys(op).filter((k) => !['txIndex', 'amountIn', 'amountOut'].includes(k));
const brief = (a) => a && { chainId: a.chainId, denom: a.denom, originChainId: a.originChainId, originDenom: a.originDenom, symbol: a.symbol };

summary.chainIds = (await chains({})).map((c) => c.chainId).sort();
summary.moveSymbols = (await assets({ chainIds: ['minimove-1'] }))['minimove-1'].map((a) => a.symbol).sort();

const request = {
  amountIn: '1000000',
  sourceAssetChainId: 'weaver-l1-1', sourceAssetDenom: 'uinit',
  destAssetChainId: 'minimove-1', destAssetDenom: initOnMove,
};
const found = await route(request);
summary.route = {
  operationKeys: found.operations.map(keysOf),
  seconds: found.estimatedRouteDurationSeconds,
  txsRequired: found.txsRequired,
};
const signable = await messages({
  ...request,
  amountOut: found.amountOut,
  addressList: found.requiredChainAddresses.map(() => address),
  operations: found.operations,
  slippageTolerancePercent: '1',
});
const direct = await messagesDirect({
  ...request,
  chainIdsToAddresses: Object.fromEntries(found.requiredChainAddresses.map((c) => [c, address])),
  slippageTolerancePercent: '1',
});
// What a wallet gets from the one call is what it gets from the two.
summary.directMatches = {
  route: JSON.stringify(direct.route) === JSON.stringify(found),
  txs: JSON.stringify(direct.txs) === JSON.stringify(signable.txs),
  msgs: JSON.stringify(direct.msgs) === JSON.stringify(signable.msgs),
  minAmountOut: direct.minAmountOut === signable.minAmountOut,
};
summary.directTypeUrls = direct.txs.map((t) => t.cosmosTx.msgs.map((m) => m.msgTypeUrl));

const reachable = await assetsFromSource({ sourceAssetDenom: 'uinit', sourceAssetChainId: 'weaver-l1-1' });
summary.fromSource = Object.fromEntries(Object.entries(reachable).map(([chain, list]) => [chain, list.map((a) => a.denom).sort()]));

const between = await assetsBetweenChains({ sourceChainId: 'noble-devnet-1', destChainId: 'minimove-1', allowMultiTx: false });
summary.between = between.assetsBetweenChains.map((p) => ({
  source: p.assetOnSource.denom, dest: p.assetOnDest.denom, txsRequired: p.txsRequired, bridges: p.bridges,
}));

const recommended = await recommendAssets({
  requests: [
    { sourceAssetDenom: 'uusdc', sourceAssetChainId: 'noble-devnet-1', destChainId: 'minimove-1' },
    { sourceAssetDenom: usdcOnMove, sourceAssetChainId: 'minimove-1', destChainId: 'noble-devnet-1' },
    { sourceAssetDenom: 'unothing', sourceAssetChainId: 'minimove-1', destChainId: 'noble-devnet-1' },
  ],
});
summary.recommended = recommended.map((entry) => entry.error
  ? { error: entry.error.message }
  : entry.recommendations.map((r) => ({ denom: r.asset.denom, chainId: r.asset.chainId, reason: r.reason })));

const origins = await ibcOriginAssets({
  assets: [
    { denom: usdcDirectOnMove, chainId: 'minimove-1' },
    { denom: initOnMove, chainId: 'minimove-1' },
    { denom: 'ibc/0000000000000000000000000000000000000000000000000000000000000000', chainId: 'minimove-1' },
  ],
});
summary.origins = origins.map((o) => ({ found: o.assetFound, asset: brief(o.asset) ?? null }));

const held = await balances({ chains: { 'minimove-1': { address, denoms: ['umin', initOnMove] } } });
summary.balances = Object.fromEntries(Object.entries(held.chains['minimove-1'].denoms).map(([d, b]) => [d, b.amount]));

summary.venues = (await venues({})).map((v) => `${v.name}@${v.chainId}`);
summary.bridges = (await bridges()).map((b) => b.id).sort();

const tracked = await trackTransaction({ txHash: trackedHash, chainId: 'weaver-l1-1' });
summary.tracked = { txHash: tracked.txHash, hasLink: 'explorerLink' in tracked };
const status = await transactionStatus({ txHash: trackedHash, chainId: 'weaver-l1-1' });
summary.status = status.state;

console.log(JSON.stringify(summary));
