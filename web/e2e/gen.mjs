// gen.mjs - generated sessions for the browser tests and bench/web: N
// kernels on 2 GPUs x 4 streams with real C++ template kernel names
// (mangled, with the demangled form libgpufl writes: docs/events.md
// "dict"), launch API calls from one CPU thread per GPU (`api`, `tid`),
// copies, and bursts separated by idle gaps, so that a window may be dense
// (drawn from the server's summary) or sparse (exact kernels).
import zlib from 'node:zlib';

/* Itanium names from g++ 14 and their c++filt forms. */
export const NAMES = [
  [
    '_ZN5flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi64ELi4ELb0ELb0EN7cutlass10bfloat16_tEELb0ELb1ELb1EEEv16Flash_fwd_params',
    'void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, true, true>(Flash_fwd_params)',
  ],
  [
    '_ZN5flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi64ELi128ELi128ELi4ELb1ELb0EN7cutlass6half_tEELb0ELb0ELb1EEEv16Flash_fwd_params',
    'void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, true, false, cutlass::half_t>, false, false, true>(Flash_fwd_params)',
  ],
  [
    '_ZN5flash44flash_bwd_dq_dk_dv_loop_seqk_parallel_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi64ELi4ELb0ELb0EN7cutlass10bfloat16_tEELb0ELb1EEEv16Flash_bwd_params',
    'void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, true>(Flash_bwd_params)',
  ],
  [
    '_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_10AddFunctorIfEESt5arrayIPcLm3EEEEviT0_T1_',
    'void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, std::array<char*, 3ul> >(int, at::native::AddFunctor<float>, std::array<char*, 3ul>)',
  ],
  [
    '_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_10MulFunctorIN3c108BFloat16EEESt5arrayIPcLm3EEEEviT0_T1_',
    'void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::MulFunctor<c10::BFloat16>, std::array<char*, 3ul>)',
  ],
  [
    '_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_10AddFunctorIN3c104HalfEEESt5arrayIPcLm2EEEEviT0_T1_',
    'void at::native::vectorized_elementwise_kernel<2, at::native::AddFunctor<c10::Half>, std::array<char*, 2ul> >(int, at::native::AddFunctor<c10::Half>, std::array<char*, 2ul>)',
  ],
  [
    '_ZN2at6native19cunn_SoftMaxForwardIN3c108BFloat16EfLi8EEEvPT_PKS4_i',
    'void at::native::cunn_SoftMaxForward<c10::BFloat16, float, 8>(c10::BFloat16*, c10::BFloat16 const*, int)',
  ],
  [
    '_ZN2at6native13reduce_kernelIfLi512EEEvPT_PKS2_i',
    'void at::native::reduce_kernel<float, 512>(float*, float const*, int)',
  ],
  [
    '_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalINS1_9GemmShapeILi128ELi256ELi64EEENS_10bfloat16_tENS_4arch4Sm90ELb0EEEEEvNT_6ParamsE',
    'void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GemmShape<128, 256, 64>, cutlass::bfloat16_t, cutlass::arch::Sm90, false> >(cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GemmShape<128, 256, 64>, cutlass::bfloat16_t, cutlass::arch::Sm90, false>::Params)',
  ],
  [
    '_ZN7ncclDev32ncclKernel_AllReduce_RING_LL_SumILi0ELi1EN3c108BFloat16EEEvPT1_PKS3_m',
    'void ncclDev::ncclKernel_AllReduce_RING_LL_Sum<0, 1, c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, unsigned long)',
  ],
  [
    'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas',
    null,
  ],
  ['elementwise_add_f32', null],
];

/* Lines of a session: sid, t0 (epoch ns, bigint), n kernels.  Options:
   lanes (8: 2 GPUs x 4 streams), api (launch calls with tid), copyEvery
   (a memcpy every N kernels on lane 0, 0: none), burst (kernels per lane
   between idle gaps), gapNs ([min, max] of an idle gap), app, end (false:
   no session_end line, the session stays running), system (the session
   also writes a system stream: systemLines). */
export function* sessionLines(sid, t0, n, o = {}) {
  const lanes = o.lanes ?? 8;
  const api = o.api ?? true;
  const copyEvery = o.copyEvery ?? 0;
  const burst = o.burst ?? 2000;
  const gap = o.gapNs ?? [5_000_000, 20_000_000];
  const env = (seq, ts, rest) => `{"v":1,"sid":"${sid}","st":"device","seq":${seq},"ts":${ts},${rest}}`;
  let seq = 0;
  const devs = lanes > 4 ? 2 : 1;
  const devices = Array.from(
    { length: devs },
    (_, i) =>
      `{"id":${i},"name":"Simulated NVIDIA H100 80GB HBM3","mem":85520809984,"power_limit":700000,"sms":132,"simulated":true}`,
  );
  yield env(
    seq++,
    t0,
    `"type":"session","app":"${o.app ?? 'llm_pretrain'}","host":"gen","pid":4242,"start":${t0},"file":0,"lib":"0.1.0","simulated":true,"cmd":"web/e2e/gen.mjs (generated kernels)","interval_ms":0,"engines":{"sim":"on"},"streams":[${o.system ? '"device","system"' : '"device"'}],"devices":[${devices.join(',')}]`,
  );
  for (let i = 0; i < NAMES.length; i++) {
    const [m, d] = NAMES[i];
    yield env(
      seq++,
      t0,
      `"type":"dict","id":${i + 1},"kind":"name","name":${JSON.stringify(m)}${d ? ',"demangled":' + JSON.stringify(d) : ''}`,
    );
    yield env(
      seq++,
      t0,
      `"type":"dict","id":${100 + i},"kind":"launch","name":${i + 1},"block":[256],"regs":${32 + i * 8},"occ":0.5,"lim":"regs"`,
    );
  }
  const next = new Array(lanes).fill(0n).map((_, i) => t0 + 1000n + BigInt(i * 1000));
  const count = new Array(lanes).fill(0);
  let x = 12345;
  const rnd = () => (x = (x * 1103515245 + 12345) & 0x7fffffff);
  for (let k = 0; k < n; k++) {
    const lane = k % lanes;
    rnd();
    const dur = 2000 + (x % 150000);
    const ts = next[lane];
    count[lane]++;
    let after = BigInt(dur + 1000 + (x % 50000));
    if (burst && count[lane] % burst === 0) after += BigInt(gap[0] + (rnd() % Math.max(1, gap[1] - gap[0])));
    next[lane] = ts + after;
    const dev = Math.floor(lane / 4);
    const name = (k * 7 + (x >> 8)) % NAMES.length;
    const a = api ? `,"api":[-${8000 + (x % 20000)},${3000 + (x % 2000)}],"tid":${5000 + dev}` : '';
    yield env(
      seq++,
      ts,
      `"type":"kernel",${dev ? '"dev":1,' : ''}"stream":${(lane % 4) + 7},"corr":${k + 1},"cfg":${100 + name},"grid":[${1 + (x % 4096)}],"dur":${dur}${a}`,
    );
    if (copyEvery && k % copyEvery === 0) {
      const bytes = 1048576 * (1 + (x % 64));
      yield env(
        seq++,
        ts + BigInt(dur),
        `"type":"memcpy","stream":7,"corr":${n + k + 1},"kind":"htod","bytes":${bytes},"dur":${Math.round(bytes / 25)}`,
      );
    }
  }
  if (o.end !== false) {
    let last = t0;
    for (const t of next) if (t > last) last = t;
    yield env(
      seq,
      last,
      `"type":"session_end","reason":"shutdown","dur":${last - t0},"lines":${seq + 1},"lost":0,"rotations":0`,
    );
  }
}

/* POSTs lines to a server in gzip batches of 100,000 (the admin token). */
export async function ingestLines(url, token, lines) {
  let batch = [];
  let sent = 0;
  const flush = async () => {
    const body = zlib.gzipSync(batch.join('\n') + '\n', { level: 1 });
    const r = await fetch(url + '/api/v1/events/device', {
      method: 'POST',
      headers: {
        Authorization: 'Bearer ' + token,
        'Content-Type': 'application/x-ndjson',
        'Content-Encoding': 'gzip',
      },
      body,
    });
    const j = await r.json();
    if (r.status !== 200 || j.rejected) throw new Error('ingest: ' + r.status + ' ' + JSON.stringify(j).slice(0, 300));
    sent += batch.length;
    batch = [];
  };
  for (const l of lines) {
    batch.push(l);
    if (batch.length === 100000) await flush();
  }
  if (batch.length) await flush();
  return sent;
}

/* GPU samples (system stream) every `every` ns over [t0, t1), seq from
   seq0: utilisation, SM activity, VRAM used of 80 GiB, power of 700 W,
   PCIe throughput. */
export function* systemLines(sid, t0, t1, every, seq0 = 0, devs = 2) {
  let seq = seq0;
  let i = 0;
  for (let t = t0; t < t1; t += BigInt(every), i++)
    for (let d = 0; d < devs; d++) {
      const u = 40 + ((i * 7 + d * 13) % 60);
      yield `{"v":1,"sid":"${sid}","st":"system","seq":${seq++},"ts":${t},"type":"gpu","dev":${d},"util":${u},"mem_used":${30000000000 + i * 1000000},"mem_total":85520809984,"power":${300000 + u * 3000},"power_limit":700000,"sm_active":${(u / 110).toFixed(3)},"pcie_tx":${1000 + (i % 50) * 900},"pcie_rx":${2000 + (i % 30) * 500}}`;
    }
}

export async function ingestStream(url, token, stream, lines) {
  const body = zlib.gzipSync([...lines].join('\n') + '\n', { level: 1 });
  const r = await fetch(url + '/api/v1/events/' + stream, {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/x-ndjson', 'Content-Encoding': 'gzip' },
    body,
  });
  const j = await r.json();
  if (r.status !== 200 || j.rejected)
    throw new Error('ingest ' + stream + ': ' + r.status + ' ' + JSON.stringify(j).slice(0, 300));
  return j;
}
