"""CALM: composing a frozen anchor LM with frozen augmenting LMs (Bansal et al., 2024)."""
