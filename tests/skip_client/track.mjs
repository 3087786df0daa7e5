// Tracks an already-broadcast tx with the real @skip-go/client SDK against weaver's router, as
// a wallet does after broadcasting: trackTransaction, then waitForTransaction (which polls
// transactionStatus every second until a terminal state), then one more transactionStatus.
// Prints one JSON summary for the Rust test to check.
//   usage: node track.mjs http://127.0.0.1:PORT CHAIN_ID TX_HASH [WITHIN_MS]
import { setApiOptions, trackTransaction, transactionStatus, waitForTransactionWithCancel } from '@skip-go/client';

const [apiUrl, chainId, txHash, withinArg] = process.argv.slice(2);
const within = Number(withinArg ?? 90000);
setApiOptions({ apiUrl });
const summary = { states: [] };

summary.tracked = await trackTransaction({ chainId, txHash });

const { promise, cancel } = waitForTransactionWithCancel({
  chainId,
  txHash,
  // Tracked above: waitForTransaction need not track again.
  explorerLink: summary.tracked.explorerLink,
  onStatusUpdated: (status) => {
    if (summary.states.at(-1) !== status.state) summary.states.push(status.state);
  },
});
const timer = setTimeout(cancel, within);
try {
  const done = await promise;
  summary.waited = { state: done.state };
} catch (e) {
  // STATE_COMPLETED_ERROR and STATE_ABANDONED end waitForTransaction with an error.
  summary.waited = { error: e.message };
} finally {
  clearTimeout(timer);
}

const last = await transactionStatus({ chainId, txHash });
summary.final = {
  state: last.state,
  status: last.status,
  hops: (last.transferSequence ?? []).map((hop) => {
    const [kind, body] = Object.entries(hop)[0];
    const txs = body.packetTxs ?? body.txs ?? {};
    return {
      kind,
      state: body.state,
      fromChainId: body.fromChainId,
      toChainId: body.toChainId,
      legs: Object.fromEntries(
        Object.entries(txs)
          .filter(([name, leg]) => name !== 'error' && leg)
          .map(([name, leg]) => [name, { chainId: leg.chainId, txHash: leg.txHash, explorerLink: leg.explorerLink }]),
      ),
    };
  }),
  transferAssetRelease: last.transferAssetRelease ?? null,
  error: last.error ?? null,
};
console.log(JSON.stringify(summary));
