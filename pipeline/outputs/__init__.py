"""What people read: explain text, the HTML report, puzzle collections."""
