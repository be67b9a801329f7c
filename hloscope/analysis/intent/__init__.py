"""What the step asked for and which transfer is whose: the intent model (``model``), its manifest
form (``manifest``), the account's records (``outcome``) and the pass that builds them (``account``),
the one naming decision (``naming``), placement annotations, remat clones."""
