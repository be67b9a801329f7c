"""What the step asked for and which transfer is whose: the intent account, the one naming decision,
placement annotations, remat clones."""
