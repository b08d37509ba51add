"""How the anchor reads its augmenting models: the forward hooks of a composition and the cross-attention
keys/values of each step, per composition mode.

`CALMKeysValuesMixin` holds the methods of `CALMForCausalLM` (modeling_calm.py) that
  - register the forward hooks: one on each connected mA layer (or on mA's final norm) that captures its output while
    an mA runs inside a composition, and one on each connected anchor layer that adds the cross-attention update;
  - run each mA up to its deepest connected layer and turn its captured states into keys/values per connection;
  - build an `_AnchorStep` (cross_attention.py) for the anchor's forward, in each mode: iterative (CALM proper: mA
    reads the same tokens), cross-tokenizer (each mA reads its own tokens of the same text, alignment.py; with the
    per-token masks of a sliding-window mA when decoding with a cache) and encoder (§4.4: mA reads the prompt once).

They read the composition's attributes (`anchor`, `augmenting`, `bridges`, `processor`, `_augmenting_layers`,
`_final_norms`, `_connections`, `_step`, `_captured`), which `CALMForCausalLM.__init__` sets.
"""
from __future__ import annotations

import torch

from .alignment import Alignment, pending_layout
from .base_models import decoder_layers, text_config
from .configuration_calm import CompositionInputError
from .cross_attention import _AnchorStep, _positions_from_mask


class CALMKeysValuesMixin:
    """The hooks and the per-mode keys/values of `CALMForCausalLM` (see the module doc)."""

    def _register_hooks(self):
        anchor_layers = decoder_layers(self.anchor)
        targets: dict[int, list[tuple[int, int]]] = {}
        for a, connections in enumerate(self._connections):
            layers = self._augmenting_layers[a]
            for i in sorted({i for i, _ in connections}):
                # The final norm runs right after the last layer, so its output stands for that layer's.
                norm_after = self._final_norms[a]
                module = norm_after[0] if norm_after is not None and i == norm_after[1] else layers[i]
                module.register_forward_hook(self._capture_hook(a, i))
            for c, (_, j) in enumerate(connections):
                targets.setdefault(j, []).append((a, c))
        for j, connection_ids in targets.items():
            anchor_layers[j].register_forward_hook(self._anchor_hook(connection_ids))

    def _capture_hook(self, augmenting_index: int, layer: int):
        def hook(module, args, output):
            if self._captured is not None:
                self._captured[(augmenting_index, layer)] = output[0] if isinstance(output, tuple) else output

        return hook

    def _anchor_hook(self, connection_ids: list[tuple[int, int]]):
        def hook(module, args, output):
            step = self._step
            if step is None:  # the anchor is being used on its own
                return None
            hidden = output[0] if isinstance(output, tuple) else output
            for a, c in connection_ids:
                if step.keys_values[a] is None:  # cross-tokenizer: no mA token yet, so nothing to read (update 0)
                    continue
                keys, values = step.keys_values[a][c]
                positions = step.positions[a] if isinstance(step.positions, list) else step.positions
                update = self.bridges[a][c](hidden, positions, keys, values, step.allowed[a], step.has_key[a])
                hidden = hidden + update
            return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

        return hook

    def _run_augmenting(self, index, input_ids, attention_mask, position_ids, past_key_values, use_cache):
        """mA up to its deepest connected layer, without gradients; returns its cache and {layer: states}."""
        self._captured = {}
        try:
            with torch.no_grad():
                outputs = self.augmenting[index](
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    position_ids=position_ids,
                    past_key_values=past_key_values,
                    use_cache=use_cache,
                )
            captured = {layer: states for (a, layer), states in self._captured.items() if a == index}
        finally:
            self._captured = None
        return (outputs.past_key_values if use_cache else None), captured

    def _keys_values(self, index, states, positions):
        return [
            bridge.keys_values(states[i], positions)
            for bridge, (i, _) in zip(self.bridges[index], self._connections[index])
        ]

    def _iterative_keys_values(self, input_ids, attention_mask, position_ids, cache, past) -> _AnchorStep:
        """CALM proper: mA reads the new tokens too; mB position t reads mA positions <= t that are real tokens."""
        total = past + input_ids.shape[1]
        key_index = torch.arange(total, device=input_ids.device)
        query_index = key_index[past:]
        allowed = attention_mask.bool()[:, None, None, :] & (key_index[None, :] <= query_index[:, None])[None, None]
        has_key = allowed.any(dim=-1, keepdim=True)
        allowed = allowed | ~has_key  # such rows attend anywhere; their update is zeroed by has_key
        keys_values = []
        for a in range(len(self.augmenting)):
            augmenting_cache, states = self._run_augmenting(
                a, input_ids, attention_mask, position_ids,
                cache.augmenting[a] if cache is not None else None, cache is not None,
            )
            new = self._keys_values(a, states, position_ids)
            if cache is not None:
                if cache.keys_values[a] is not None:
                    new = [
                        (torch.cat([k0, k1], dim=2), torch.cat([v0, v1], dim=2))
                        for (k0, v0), (k1, v1) in zip(cache.keys_values[a], new)
                    ]
                cache.augmenting[a] = augmenting_cache
                cache.keys_values[a] = new
            keys_values.append(new)
        count = len(self.augmenting)
        return _AnchorStep(position_ids, keys_values, [allowed] * count, [has_key] * count)

    def _cross_keys_values(
        self, input_ids, attention_mask, cache, past, augmenting_input_ids, augmenting_attention_mask,
        augmenting_visible,
    ) -> _AnchorStep:
        """Different tokenizers (alignment.py): each mA reads its own tokens of the text; anchor token t reads the
        first augmenting_visible[:, t] of them. Without a cache the whole rows are aligned (or taken as given); with
        one, the new anchor tokens extend each row's text and mA reads only the tokens they make stable, its cache
        never cropped. Cross-attention positions count mA tokens: mA token s sits at s, and anchor token t at the
        number of mA tokens it may read, so that the last of them is always one position back."""
        count = len(self.augmenting)
        new_mask = attention_mask[:, past:]
        if cache is None:
            if augmenting_input_ids is None:
                inputs = self.processor.augmenting_inputs(input_ids, new_mask)
                augmenting_input_ids, augmenting_attention_mask, augmenting_visible = (
                    inputs["augmenting_input_ids"], inputs["augmenting_attention_mask"], inputs["augmenting_visible"]
                )
            steps = [[v] if isinstance(v, torch.Tensor) else list(v)
                     for v in (augmenting_input_ids, augmenting_attention_mask, augmenting_visible)]
            device = input_ids.device
            steps = [(ids.to(device), mask.to(device), visible.to(device)) for ids, mask, visible in zip(*steps)]
        else:
            if augmenting_input_ids is not None:
                raise CompositionInputError("with a cache the composition aligns the anchor's tokens itself: give "
                                            "input_ids only")
            if cache.alignment is None:
                cache.alignment = self.processor.start(input_ids.shape[0])
            committed = self.processor.push(cache.alignment, input_ids, new_mask)
            new = input_ids.shape[1]
            steps = [  # this step's newly committed mA tokens, right-padded to the widest row
                Alignment(committed[a], [rows.visible[-new:] for rows in cache.alignment[a]], []).tensors(
                    self.processor.augmenting_pad_ids[a], new)
                for a in range(count)
            ]
            steps = [tuple(part.to(input_ids.device) for part in step) for step in steps]
        keys_values, allowed, has_key, positions = [], [], [], []
        for a, (ids, mask, visible) in enumerate(steps):
            previous = cache.augmenting_mask[a] if cache is not None else None
            full_mask = mask.long() if previous is None else torch.cat([previous, mask.long()], dim=1)
            ordinal = full_mask.cumsum(-1) - 1  # each slot's index among the row's real mA tokens
            kv = cache.keys_values[a] if cache is not None else None
            if ids.shape[1] > 0:
                slot_positions = ordinal[:, -ids.shape[1] :].clamp(min=0)
                masks, augmenting_cache = full_mask, cache.augmenting[a] if cache is not None else None
                if cache is not None and self._sliding_window(a) is not None:
                    masks = self._sliding_window_masks(a, full_mask, ordinal, ids.shape[1])
                    if augmenting_cache is None:  # one that keeps every slot: the window is counted in tokens
                        from transformers import DynamicCache

                        augmenting_cache = DynamicCache()
                augmenting_cache, states = self._run_augmenting(
                    a, ids, masks, slot_positions, augmenting_cache, cache is not None,
                )
                real = mask.bool()[..., None]
                states = {layer: value.masked_fill(~real, 0) for layer, value in states.items()}  # padding: finite
                fresh = self._keys_values(a, states, slot_positions)
                kv = fresh if kv is None else [
                    (torch.cat([k0, k1], dim=2), torch.cat([v0, v1], dim=2)) for (k0, v0), (k1, v1) in zip(kv, fresh)
                ]
                if cache is not None:
                    cache.augmenting[a], cache.keys_values[a] = augmenting_cache, kv
            if cache is not None:
                cache.augmenting_mask[a] = full_mask
            rows = full_mask.bool()[:, None, None, :] & (ordinal[:, None, None, :] < visible[:, None, :, None])
            row_has_key = rows.any(dim=-1, keepdim=True)
            keys_values.append(kv)
            allowed.append(rows | ~row_has_key)  # such rows attend anywhere; their update is zeroed by has_key
            has_key.append(row_has_key)
            positions.append(visible)
        return _AnchorStep(positions, keys_values, allowed, has_key)

    def _pending_keys_values(self, input_ids, attention_mask, cache, past) -> _AnchorStep:
        """`read_pending`: as `_cross_keys_values`, and anchor token t also reads mA's states on its *tail*, mA's
        tokens of the text after the committed ones, as mA tokenizes that text at t. The tail is unstable (text
        appended later may retokenize it), so it is never committed as such: its slots (`PendingLayout`) read the
        committed tokens and the tail before them, and later steps read only the committed path. A tail token that
        the same step then commits as it was is one slot, computed once. With a cache, mA's cache keeps every slot
        and the composition masks the tails' out (nothing is cropped). Training and decoding still see the same
        thing: both take the tails from the same `IncrementalAlignment.push`. Given augmenting inputs are not used
        here: the tails need the alignment itself, so it is made from input_ids."""
        new_mask = attention_mask[:, past:]
        if cache is None:
            alignments = self.processor.align(input_ids, new_mask, pending=True)
            steps = [(al.ids, [0] * len(al.ids), al.visible, al.tails) for al in alignments]
        else:
            if cache.alignment is None:
                cache.alignment = self.processor.start(input_ids.shape[0], pending=True)
            committed = self.processor.push(cache.alignment, input_ids, new_mask)
            new = input_ids.shape[1]
            steps = []
            for a, rows in enumerate(cache.alignment):
                previous = cache.augmenting_mask[a]
                first = previous.sum(-1).tolist() if previous is not None else [0] * len(rows)
                steps.append((committed[a], first, [r.visible[-new:] for r in rows], [r.tails[-new:] for r in rows]))
        keys_values, allowed, has_key, positions = [], [], [], []
        for a, (ids, first, visible, tails) in enumerate(steps):
            layout = pending_layout(ids, first, visible, tails, self.processor.augmenting_pad_ids[a], input_ids.shape[1])
            layout = {k: v.to(input_ids.device) for k, v in vars(layout).items()}
            previous = cache.augmenting_mask[a].bool() if cache is not None and cache.augmenting_mask[a] is not None \
                else None  # the committed slots of earlier steps
            kv = cache.keys_values[a] if cache is not None else None
            if layout["ids"].shape[1] > 0:
                augmenting_cache = None
                if cache is not None:
                    from transformers import DynamicCache

                    augmenting_cache = cache.augmenting[a] if cache.augmenting[a] is not None else DynamicCache()
                augmenting_cache, states = self._run_augmenting(
                    a, layout["ids"], self._pending_masks(a, layout, previous), layout["ordinal"], augmenting_cache,
                    cache is not None,
                )
                real = layout["real"][..., None]
                states = {layer: value.masked_fill(~real, 0) for layer, value in states.items()}  # padding: finite
                fresh = self._keys_values(a, states, layout["ordinal"])
                kv = fresh if kv is None else [
                    (torch.cat([k0, k1], dim=2), torch.cat([v0, v1], dim=2)) for (k0, v0), (k1, v1) in zip(kv, fresh)
                ]
                if cache is not None:
                    cache.augmenting[a], cache.keys_values[a] = augmenting_cache, kv
            if cache is not None:
                cache.augmenting_mask[a] = layout["committed"].long() if previous is None else torch.cat(
                    [previous.long(), layout["committed"].long()], dim=1)
            # anchor token t reads every committed slot of earlier steps and the path to its frontier in this one
            frontier = layout["frontier"]
            batch, length = frontier.shape
            if layout["ancestors"].shape[-1] == 0:  # no slot in any row (a prompt that is a character's first bytes)
                rows = torch.zeros((batch, length, 0), dtype=torch.bool, device=frontier.device)
            else:
                rows = layout["ancestors"][torch.arange(batch, device=frontier.device)[:, None], frontier.clamp(min=0)]
                rows = rows & (frontier >= 0)[..., None]
            if previous is not None:
                rows = torch.cat([previous[:, None, :].expand(batch, length, -1), rows], dim=-1)
            rows = rows[:, None]
            row_has_key = rows.any(dim=-1, keepdim=True)
            keys_values.append(kv)
            allowed.append(rows | ~row_has_key)  # such rows attend anywhere; their update is zeroed by has_key
            has_key.append(row_has_key)
            positions.append(layout["positions"])
        return _AnchorStep(positions, keys_values, allowed, has_key)

    def _pending_masks(self, index, layout, previous):
        """mA's attention masks for a `read_pending` step's slots (queries) over its cache and them (keys): a slot
        reads the committed slots of earlier steps and its path in this one (itself included, so a padding slot is
        not empty; its states are zeroed after). Counted in tokens (ordinals), also for a sliding window; per layer
        type if the model has sliding-window layers, else one 4D mask."""
        config = text_config(self.augmenting[index])
        implementation = getattr(config, "_attn_implementation", None) or "eager"
        causal, key_ordinal = layout["ancestors"], layout["ordinal"]
        if previous is not None:
            batch, queries = layout["ids"].shape
            causal = torch.cat([previous[:, None, :].expand(batch, queries, -1), causal], dim=-1)
            key_ordinal = torch.cat([previous.long().cumsum(-1) - 1, key_ordinal], dim=-1)
        masks = {"full_attention": causal[:, None]}
        window = self._sliding_window(index)
        if window is not None:  # a slot is always near itself, so no row is empty
            near = layout["ordinal"][:, :, None] - key_ordinal[:, None, :] < window
            masks["sliding_attention"] = (causal & near)[:, None]
        if implementation == "eager":  # an additive mask
            lowest = torch.finfo(self.augmenting[index].dtype).min
            masks = {kind: torch.zeros(m.shape, dtype=self.augmenting[index].dtype, device=m.device).masked_fill(
                ~m, lowest) for kind, m in masks.items()}
        elif implementation != "sdpa":
            raise CompositionInputError(
                f"augmenting model {index}: read_pending builds mA's attention masks itself, for sdpa or eager "
                f"attention, not {implementation!r}; load it with attn_implementation='sdpa'"
            )
        return masks if window is not None else masks["full_attention"]

    def _sliding_window(self, index) -> int | None:
        """The sliding window of an mA with sliding-window layers (Gemma 2 and 3, Mistral), else None."""
        config = text_config(self.augmenting[index])
        window = getattr(config, "sliding_window", None)
        return window if "sliding_attention" in (getattr(config, "layer_types", None) or ()) else None

    def _sliding_window_masks(self, index, full_mask, ordinal, new: int) -> dict:
        """Attention masks for a cached cross-tokenizer step of a sliding-window mA, per layer type, counted in its
        tokens. The model's own masks count the window in cache slots, and the rows of a batch commit mA tokens at
        different steps, so a row's slots hold padding between its tokens: past the window it would see fewer of
        its own tokens than without a cache (where its tokens are contiguous). Slot k is visible to new slot q iff
        k is a real token of the row and its ordinal is at most q's (within the window for sliding layers); a
        padding slot sees itself, so that no row is empty (its states are zeroed after)."""
        config = text_config(self.augmenting[index])
        implementation = getattr(config, "_attn_implementation", None) or "eager"
        if implementation not in ("sdpa", "eager"):
            raise CompositionInputError(
                f"augmenting model {index} attends within a sliding window, which cached cross-tokenizer decoding "
                f"counts in its tokens with sdpa or eager attention, not {implementation!r}; load it with "
                "attn_implementation='sdpa' or decode with use_cache=False"
            )
        slots = full_mask.shape[1]
        key_ordinal, query_ordinal = ordinal[:, None, :], ordinal[:, -new:, None]
        own_slot = torch.arange(slots, device=full_mask.device)[None, None, :] == (
            torch.arange(slots - new, slots, device=full_mask.device)[None, :, None])
        causal = (full_mask.bool()[:, None, :] & (key_ordinal <= query_ordinal)) | own_slot
        window = causal & ((query_ordinal - key_ordinal < self._sliding_window(index)) | own_slot)
        masks = {"full_attention": causal[:, None], "sliding_attention": window[:, None]}
        if implementation == "eager":  # an additive mask
            lowest = torch.finfo(self.augmenting[index].dtype).min
            masks = {kind: torch.zeros(m.shape, dtype=self.augmenting[index].dtype, device=m.device).masked_fill(
                ~m, lowest) for kind, m in masks.items()}
        return masks

    def _encoder_keys_values(
        self, input_ids, attention_mask, position_ids, augmenting_input_ids, augmenting_attention_mask, cache
    ) -> _AnchorStep:
        """§4.4 ablation: mA encodes the prompt once; every mB position may read every real prompt token."""
        new_tokens = input_ids.shape[1]
        keys_values, allowed, has_key = [], [], []
        for a in range(len(self.augmenting)):
            if cache is not None and cache.keys_values[a] is not None:
                kv, key_mask = cache.keys_values[a], cache.augmenting_mask[a]
            else:
                if augmenting_input_ids is None:
                    raise CompositionInputError(
                        "mode='encoder' needs augmenting_input_ids (the prompt mA reads once, with its "
                        "augmenting_attention_mask); without it mA would read all of input_ids, so earlier positions "
                        "would see later tokens. generate() passes the prompt itself."
                    )
                if augmenting_attention_mask is None:
                    augmenting_attention_mask = torch.ones_like(augmenting_input_ids)
                augmenting_positions = _positions_from_mask(augmenting_attention_mask)
                _, states = self._run_augmenting(
                    a, augmenting_input_ids, augmenting_attention_mask, augmenting_positions, None, False
                )
                kv = self._keys_values(a, states, augmenting_positions)
                key_mask = augmenting_attention_mask.bool()
                if cache is not None:
                    cache.keys_values[a], cache.augmenting_mask[a] = kv, key_mask
            rows = key_mask[:, None, None, :].expand(-1, 1, new_tokens, -1)
            row_has_key = rows.any(dim=-1, keepdim=True)
            keys_values.append(kv)
            allowed.append(rows | ~row_has_key)
            has_key.append(row_has_key)
        return _AnchorStep(position_ids, keys_values, allowed, has_key)
