"""Training step time of candidate code-world shapes, 1 thread, on 32 real code_train rows (fwd + bwd + AdamW).

    cd <calibration workdir with data/code and models/code/tokenizer> && python <repo>/experiments/table4/speed.py
"""
import pipeline  # noqa: F401,E402  (first: it pins the CPU float path before torch loads)
import time, json, torch, sys
torch.set_num_threads(1)
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[2]))
from pipeline.tokenization import load_tokenizer
from pipeline.training.architectures import build_base_model
tok = load_tokenizer('models/code/tokenizer')
rows = [json.loads(l) for l in open('data/code/code_train.jsonl')][:64]
enc = [tok(r['target'])['input_ids'] for r in rows]
L = max(map(len, enc)); print('maxlen', L, 'mean', sum(map(len,enc))/len(enc))
for arch in [dict(type='llama',layers=2,hidden=128,heads=4,intermediate=512), dict(type='llama',layers=2,hidden=192,heads=6,intermediate=768), dict(type='llama',layers=4,hidden=256,heads=8,intermediate=1024)]:
    m = build_base_model(arch, tok, 400)
    opt = torch.optim.AdamW(m.parameters(), 1e-3)
    for bs in (32,):
        ids = torch.full((bs, L), tok.pad_token_id); mask = torch.zeros((bs, L), dtype=torch.long)
        for i,e in enumerate(enc[:bs]): ids[i,:len(e)] = torch.tensor(e); mask[i,:len(e)] = 1
        labels = ids.masked_fill(mask==0, -100)
        for it in range(4):
            if it == 1: t0 = time.time()
            out = m(input_ids=ids, attention_mask=mask, labels=labels); out.loss.backward(); opt.step(); opt.zero_grad()
        dt = (time.time()-t0)/3
        print(arch['layers'], arch['hidden'], 'bs', bs, f'{dt:.2f} s/step', f'{int(mask.sum())/dt:.0f} real tok/s', sum(p.numel() for p in m.parameters()))
