## Words every part of the bot uses.

# A private refusal: the prefix and the reason.
refusal = ⚠️ { $reason }
