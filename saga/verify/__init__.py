"""`saga verify --stack NAME`: a deployment proved end to end in its own account. Each check is data
(`checks.Check`: a name, what it runs, the remedy when it fails): the account and the functions as
configured (`configuration`), a signed journey on both roads and the doors that must stay shut
(`journey`), the signals an operator relies on: dashboard metrics and the alarm path (`signals`)."""
